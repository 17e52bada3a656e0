//! linear operators (stub: filled in by the linear family work).

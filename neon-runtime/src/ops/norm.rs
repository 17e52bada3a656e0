//! norm operators (stub: filled in by the norm family work).

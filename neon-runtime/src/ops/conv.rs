//! conv operators (stub: filled in by the conv family work).

//! elementwise operators (stub: filled in by the elementwise family work).

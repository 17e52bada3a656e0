//! activation operators (stub: filled in by the activation family work).

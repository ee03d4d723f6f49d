//! The restaurant services.

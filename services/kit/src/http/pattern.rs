//! Path patterns (`/tables/{id}/seat`): their parameter names and segments, for the adapters whose
//! router wants them spelled their own way.

/// The parameter names of a pattern such as `/tables/{id}/seat`.
pub fn pattern_params(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .collect()
}

/// A segment of a path pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment<'a> {
    /// A literal segment.
    Literal(&'a str),
    /// A `{name}` parameter.
    Param(&'a str),
}

/// Splits a pattern into its segments (`/tables/{id}` → `tables`, `{id}`).
pub fn pattern_segments(path: &str) -> Vec<Segment<'_>> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(
            |seg| match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => Segment::Param(name),
                None => Segment::Literal(seg),
            },
        )
        .collect()
}

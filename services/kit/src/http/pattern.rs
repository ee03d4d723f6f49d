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

/// Where a pattern's parameters sit among a path's segments: how the kit takes path parameters
/// from the raw path a runtime's router matched, so that every runtime delivers the same values
/// whatever its router decodes (docs/reliability.md, "One answer on every runtime").
#[derive(Debug, Clone, Default)]
pub struct ParamSlots {
    /// The pattern.
    pattern: &'static str,
    /// How many segments the pattern has.
    segments: usize,
    /// Each parameter's segment index and name, in order.
    slots: Vec<(usize, &'static str)>,
}

/// Why a path's parameters could not be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamError {
    /// The path does not have the pattern's segments (a router that matched it after normalising
    /// it, e.g. a trailing `/`): no route takes it as it came.
    Shape,
    /// The parameter named decodes to bytes that are not UTF-8.
    NotUtf8(&'static str),
}

impl ParamSlots {
    /// The slots of `pattern` (`/tables/{id}/seat`).
    pub fn of(pattern: &'static str) -> ParamSlots {
        let segments: Vec<&'static str> = pattern
            .strip_prefix('/')
            .unwrap_or(pattern)
            .split('/')
            .collect();
        let slots = segments
            .iter()
            .enumerate()
            .filter_map(|(i, seg)| {
                let name = seg.strip_prefix('{').and_then(|s| s.strip_suffix('}'))?;
                Some((i, name))
            })
            .collect();
        ParamSlots {
            pattern,
            segments: segments.len(),
            slots,
        }
    }

    /// Whether the pattern has no parameter.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Whether `path` (raw, without the query) has the pattern's segments: a router that matched
    /// it after normalising it (skipping an empty segment, a trailing `/`) matched a path no route
    /// takes as it came. Counts the path's `/`s, nothing more: literal segments are the router's
    /// (some decode `%61` to `a` before they compare, as the house rules do for the others).
    pub fn fits(&self, path: &str) -> bool {
        if path == self.pattern {
            return true; // a pattern without parameters, as it is (the common case: no count)
        }
        let path = path.strip_prefix('/').unwrap_or(path);
        path.bytes().filter(|&b| b == b'/').count() + 1 == self.segments
    }

    /// The parameters of `path` (raw, as it came, without the query), a path matched to this
    /// pattern: each the segment in its place, percent-decoded once (RFC 3986 §2.1): `%2F` is a
    /// `/` in the value and never a segment break, `+` stays `+`, and an escape that is not two
    /// hex digits stays as it is (as in the WHATWG URL standard).
    #[inline]
    pub fn take(&self, path: &str) -> Result<Vec<(String, String)>, ParamError> {
        if self.slots.is_empty() && path == self.pattern {
            return Ok(Vec::new()); // the common case, inlined into every request's call
        }
        self.take_from(path)
    }

    /// [`ParamSlots::take`] past its common case.
    fn take_from(&self, path: &str) -> Result<Vec<(String, String)>, ParamError> {
        if !self.fits(path) {
            return Err(ParamError::Shape);
        }
        if self.slots.is_empty() {
            return Ok(Vec::new());
        }
        let path = path.strip_prefix('/').unwrap_or(path);
        let mut slots = self.slots.iter().peekable();
        let mut params = Vec::with_capacity(self.slots.len());
        for (i, segment) in path.split('/').enumerate() {
            if let Some(&(_, name)) = slots.next_if(|(at, _)| *at == i) {
                let value = percent_encoding::percent_decode_str(segment)
                    .decode_utf8()
                    .map_err(|_| ParamError::NotUtf8(name))?;
                params.push((name.to_string(), value.into_owned()));
            }
        }
        Ok(params)
    }
}

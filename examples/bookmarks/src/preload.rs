//! Realistic bookmarks for `serve --preload N`: a hundred users with about N/100 bookmarks each,
//! one in four archived, each with one of a few tags. A pure function of the document's number, so
//! chunks and reruns agree.

use std::ops::Range;

use brigade_kit::preload::{preload_id, Preload};
use brigade_kit::store::Doc;

use crate::model::{Bookmark, Stored};

/// The bookmarks' preload source.
#[derive(Debug, Clone, Copy, Default)]
pub struct BookmarkData;

const TAGS: [&str; 4] = ["rust", "web", "databases", "reading"];

/// Preloaded bookmark `n`.
fn bookmark(n: u64) -> Bookmark {
    Bookmark {
        id: preload_id(n),
        user: format!("user{}", n % 100),
        url: format!("https://example.com/articles/{n}"),
        title: format!("Article number {n}"),
        tags: vec![TAGS[(n % 4) as usize].to_string()],
        archived: n % 4 == 3,
    }
}

impl Preload for BookmarkData {
    fn documents(&self, _collection: &str, range: Range<u64>, _total: u64) -> Vec<Doc> {
        range
            .filter_map(|n| brigade_kit::resource::to_doc(&Stored::of(&bookmark(n))).ok())
            .collect()
    }
}

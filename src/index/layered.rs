//! Paper vectors of one encoder's space from two sources: the encoder's own
//! (the primary store) and a cheaper stand-in's written into the same space
//! (the fallback store, e.g. a student distilled from the encoder) for the
//! papers the primary lacks. A paper with a primary vector is never read
//! from the fallback, so replacing stand-in vectors by the encoder's own
//! only changes which row answers.

use super::vectors::{VectorHit, VectorStore};

pub struct LayeredVectors {
    primary: Option<VectorStore>,
    fallback: Option<VectorStore>,
    /// Fallback rows to skip: emptied, or their paper has a primary vector.
    shadowed: Vec<bool>,
    /// Papers only the fallback covers.
    fallback_only: usize,
}

impl LayeredVectors {
    /// The two stores (same width); `None` when neither holds a vector.
    pub fn new(primary: Option<VectorStore>, fallback: Option<VectorStore>) -> Option<LayeredVectors> {
        let primary = primary.filter(|s| !s.is_empty());
        let fallback = fallback.filter(|s| !s.is_empty());
        if let (Some(p), Some(f)) = (&primary, &fallback) {
            assert_eq!(p.dim(), f.dim(), "layered vector stores of different widths");
        }
        let shadowed: Vec<bool> = match &fallback {
            Some(f) => (0..f.rows())
                .map(|r| {
                    let id = f.id_of_row(r);
                    id.is_empty() || primary.as_ref().is_some_and(|p| p.vector(id).is_some())
                })
                .collect(),
            None => Vec::new(),
        };
        let fallback_only = shadowed.iter().filter(|s| !**s).count();
        (primary.is_some() || fallback.is_some()).then_some(LayeredVectors { primary, fallback, shadowed, fallback_only })
    }

    pub fn dim(&self) -> usize {
        self.primary.as_ref().or(self.fallback.as_ref()).map_or(0, VectorStore::dim)
    }

    /// Papers with a vector from either source.
    pub fn len(&self) -> usize {
        self.primary_len() + self.fallback_only
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Papers with the encoder's own vector.
    pub fn primary_len(&self) -> usize {
        self.primary.as_ref().map_or(0, VectorStore::len)
    }

    /// Papers with only a stand-in vector.
    pub fn fallback_len(&self) -> usize {
        self.fallback_only
    }

    /// The vector of `id`: the primary's when it has one.
    pub fn vector(&self, id: &str) -> Option<&[f32]> {
        self.primary.as_ref().and_then(|p| p.vector(id)).or_else(|| self.fallback.as_ref().and_then(|f| f.vector(id)))
    }

    /// Whether `id` has the encoder's own vector (not a stand-in).
    pub fn has_own(&self, id: &str) -> bool {
        self.primary.as_ref().is_some_and(|p| p.vector(id).is_some())
    }

    /// The `k` papers of highest cosine with `query`, best first, each paper
    /// once (exact, on `threads` threads per store).
    pub fn search(&self, query: &[f32], k: usize, threads: usize) -> Vec<VectorHit> {
        self.search_with(query, k, threads, false)
    }

    /// [`LayeredVectors::search`] scanning every f32 row (never the
    /// compact rows), for measuring what they cost in recall.
    pub fn search_exact(&self, query: &[f32], k: usize, threads: usize) -> Vec<VectorHit> {
        self.search_with(query, k, threads, true)
    }

    fn search_with(&self, query: &[f32], k: usize, threads: usize, exact: bool) -> Vec<VectorHit> {
        let search = |s: &VectorStore, skip: Option<&[bool]>| {
            if exact {
                s.search_exact(query, k, threads, skip)
            } else {
                s.search_skipping(query, k, threads, skip)
            }
        };
        let mut hits = self.primary.as_ref().map(|p| search(p, None)).unwrap_or_default();
        if let Some(f) = &self.fallback {
            hits.extend(search(f, Some(&self.shadowed)));
            hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
            hits.truncate(k);
        }
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(angle: f32) -> [f32; 2] {
        [angle.cos(), angle.sin()]
    }

    fn store(dir: &std::path::Path, name: &str, rows: &[(&str, f32)]) -> VectorStore {
        let mut s = VectorStore::open(&dir.join(name), 2, name).unwrap();
        let items: Vec<(String, u64)> = rows.iter().map(|(id, _)| (id.to_string(), 1)).collect();
        let vectors: Vec<f32> = rows.iter().flat_map(|(_, a)| unit(*a)).collect();
        s.append(&items, &vectors).unwrap();
        s
    }

    #[test]
    fn a_paper_s_own_vector_wins_and_stand_ins_fill_the_rest_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let primary = store(dir.path(), "own", &[("a", 0.0), ("b", 1.0)]);
        // "a" has a stand-in too, pointing elsewhere: it must never answer.
        let fallback = store(dir.path(), "student", &[("a", 2.0), ("c", 0.1), ("d", 2.1)]);
        let v = LayeredVectors::new(Some(primary), Some(fallback)).unwrap();
        assert_eq!((v.len(), v.primary_len(), v.fallback_len(), v.dim()), (4, 2, 2, 2));
        assert_eq!(v.vector("a").unwrap(), unit(0.0));
        assert_eq!(v.vector("c").unwrap(), unit(0.1));
        assert!(v.has_own("a") && !v.has_own("c") && !v.has_own("e"));
        assert!(v.vector("e").is_none());
        let ids = |q: f32, k: usize| v.search(&unit(q), k, 1).into_iter().map(|h| h.id).collect::<Vec<_>>();
        assert_eq!(ids(0.0, 2), ["a", "c"]);
        // Near angle 2, the stand-in of "a" would come first; "d" does.
        assert_eq!(ids(2.0, 4), ["d", "b", "c", "a"]);
        // One source alone, or none.
        let only = LayeredVectors::new(None, Some(store(dir.path(), "s2", &[("x", 0.0)]))).unwrap();
        assert_eq!((only.len(), only.primary_len(), only.fallback_len()), (1, 0, 1));
        assert!(LayeredVectors::new(None, None).is_none());
        let empty = VectorStore::open(&dir.path().join("empty"), 2, "e").unwrap();
        assert!(LayeredVectors::new(Some(empty), None).is_none());
    }
}

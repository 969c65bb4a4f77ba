#![allow(clippy::unwrap_used)] // a measurement tool, run by hand
//! Writes paper vectors computed elsewhere (`scripts/citation-in-field.py`:
//! the citation encoder adapted on a GPU machine) into a library's citation
//! vector store, under the fingerprint and the text hashes of the store
//! they replace, so that `citewise eval` reads them as the channel's own.
//!
//! cargo run --release --example put_citation_vectors -- LIBRARY RAW_F32 IDS OLD_STORE

use std::collections::HashMap;
use std::path::Path;

use citewise::index::vectors::VectorStore;
use citewise::library::Library;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [library, raw, ids, old] = args.as_slice() else {
        panic!("usage: put_citation_vectors LIBRARY RAW_F32 IDS OLD_STORE");
    };
    let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(Path::new(old).join("vectors.json")).unwrap()).unwrap();
    let dim = usize::try_from(manifest["dim"].as_u64().unwrap()).unwrap();
    let encoder = manifest["encoder"].as_str().unwrap();
    let hash: HashMap<&str, u64> = manifest["ids"]
        .as_array()
        .unwrap()
        .iter()
        .zip(manifest["hashes"].as_array().unwrap())
        .filter_map(|(id, h)| Some((id.as_str()?, h.as_u64()?)))
        .filter(|(id, _)| !id.is_empty())
        .collect();
    let bytes = std::fs::read(raw).unwrap();
    let vectors: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let ids: Vec<String> = std::fs::read_to_string(ids).unwrap().lines().map(str::to_string).collect();
    assert_eq!(vectors.len(), ids.len() * dim, "one vector of width {dim} per id");
    let items: Vec<(String, u64)> =
        ids.iter().map(|id| (id.clone(), *hash.get(id.as_str()).unwrap_or_else(|| panic!("{id}: not in {old}")))).collect();
    assert_eq!(items.len(), hash.len(), "every paper of the old store, once");
    // As the library's one writer, into its own citation store.
    let lib = Library::open(Path::new(library)).unwrap();
    let written = lib
        .writing()
        .during(|| {
            let mut store = VectorStore::open(&lib.citation_vectors_dir(), dim, encoder)?;
            assert!(store.is_empty(), "the store to write is new");
            for (part, v) in items.chunks(4096).zip(vectors.chunks(4096 * dim)) {
                store.append(part, v)?;
            }
            Ok(store.len())
        })
        .unwrap();
    println!("{written} vectors of width {dim} written under {encoder}");
}

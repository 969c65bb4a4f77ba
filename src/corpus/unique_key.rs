//! A key made unique: the base key, or the base with a letter suffix
//! (`smith2020`, `smith2020a`, … `smith2020z`, `smith2020aa`), the first
//! that is not taken. One rule for the keys export writes into a
//! bibliography and the keys a Zotero import gives items without one.

/// `base`, or `base` + a, b, ... z, aa, ... : the first that `taken` rejects not.
pub fn unique_key(base: &str, taken: impl Fn(&str) -> bool) -> String {
    unique_key_from(base, &mut 0, taken)
}

/// [`unique_key`] for many keys of one base made in a row while `taken`
/// only grows: `next` (kept per base by the caller) is the suffix the
/// search starts from, and moves past the one returned, so n papers of one
/// base take about n tries, not n²/2.
pub fn unique_key_from(base: &str, next: &mut usize, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_string();
    }
    for n in *next.. {
        let mut suffix = String::new();
        let mut k = n;
        loop {
            suffix.insert(0, (b'a' + (k % 26) as u8) as char);
            if k < 26 {
                break;
            }
            k = k / 26 - 1;
        }
        let candidate = format!("{base}{suffix}");
        if !taken(&candidate) {
            *next = n + 1;
            return candidate;
        }
    }
    unreachable!()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn suffixes_run_a_to_z_then_aa() {
        let taken: HashSet<String> = ["k", "ka"].iter().map(|s| s.to_string()).collect();
        assert_eq!(unique_key("k", |c| taken.contains(c)), "kb");
        assert_eq!(unique_key("free", |c| taken.contains(c)), "free");
        let mut all: HashSet<String> = HashSet::from(["k".to_string()]);
        let mut next = 0;
        let tries = std::cell::Cell::new(0);
        for _ in 0..30 {
            let key = unique_key_from("k", &mut next, |c| {
                tries.set(tries.get() + 1);
                all.contains(c)
            });
            all.insert(key);
        }
        let tries = tries.get();
        assert!(all.contains("kz") && all.contains("kaa") && all.contains("kad"), "{all:?}");
        assert!(tries <= 2 * 30 + 1, "each key is found in a try or two, not by trying every suffix again: {tries}");
    }
}

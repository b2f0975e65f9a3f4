//! What the JSON files of the command share: serde_json writes them (a
//! non-finite number becomes `null`), and an object whose keys are data
//! keeps the order it was built in.

use serde::{Serialize, Serializer};

/// Pretty JSON with a final newline.
pub fn pretty<T: Serialize>(v: &T) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("plain data serialises");
    s.push('\n');
    s
}

/// An object from `(key, value)` pairs, in their order.
pub struct Pairs<K, V>(pub Vec<(K, V)>);

impl<K: Serialize, V: Serialize> Serialize for Pairs<K, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_keep_their_order_and_nan_is_null() {
        let p = Pairs(vec![("z", 1.0), ("a", f64::NAN)]);
        assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"z":1.0,"a":null}"#);
        assert!(pretty(&p).ends_with("}\n"));
    }
}

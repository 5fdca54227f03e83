//! Serde helpers for the documents: a field that is absent apart from present-and-
//! null (`server` of a timeline row), counts that older runs stored as floats
//! (`5.0`), and a map split between a typed result and the fields a document adds
//! beside it (a probe's `findings`) without buffering the map.

use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `Option<Option<T>>`: absent → None, `null` → Some(None), a value → Some(Some(v)).
/// Use with `#[serde(default, skip_serializing_if = "Option::is_none", with = ...)]`.
pub mod present {
    use super::*;

    pub fn serialize<S: Serializer, T: Serialize>(
        v: &Option<Option<T>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match v {
            Some(inner) => inner.serialize(s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        d: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(d).map(Some)
    }
}

/// A count: an unsigned integer, or a float with no fraction (older runs wrote some
/// counts as `5.0`); negative, fractional, non-finite and oversized numbers are
/// refused.
pub mod count {
    use super::*;

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(*v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        d.deserialize_any(CountVisitor)
    }

    struct CountVisitor;

    impl Visitor<'_> for CountVisitor {
        type Value = u64;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a count (a whole number, 0 or more)")
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| E::custom(format!("{v} is negative: expected a count")))
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
            if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19 {
                Ok(v as u64)
            } else {
                Err(E::custom(format!("{v} is not a count")))
            }
        }
    }
}

/// Fields a document keeps beside a typed result in one JSON object.
pub(crate) trait Sidecar<'de>: Default {
    /// Whether the field `key` is the sidecar's.
    fn takes(key: &str) -> bool;
    /// Reads the value of `key` (one the sidecar takes).
    fn read<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
}

/// Reads one JSON object into `T` (its fields) and `S` (the fields `S` takes),
/// streaming: nothing is buffered, unlike `#[serde(flatten)]`.
pub(crate) fn split<'de, D, T, S>(d: D) -> Result<(T, S), D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
    S: Sidecar<'de>,
{
    struct Split<T, S>(std::marker::PhantomData<(T, S)>);

    impl<'de, T: Deserialize<'de>, S: Sidecar<'de>> Visitor<'de> for Split<T, S> {
        type Value = (T, S);

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(T, S), A::Error> {
            let mut side = S::default();
            let t = T::deserialize(de::value::MapAccessDeserializer::new(Intercept {
                map,
                side: &mut side,
            }))?;
            Ok((t, side))
        }
    }

    d.deserialize_map(Split::<T, S>(std::marker::PhantomData))
}

/// A map with the sidecar's fields taken out as they pass.
struct Intercept<'s, A, S> {
    map: A,
    side: &'s mut S,
}

impl<'de, A: MapAccess<'de>, S: Sidecar<'de>> MapAccess<'de> for Intercept<'_, A, S> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key::<String>()? else {
                return Ok(None);
            };
            if S::takes(&key) {
                self.side.read(&key, &mut self.map)?;
                continue;
            }
            let key: de::value::StringDeserializer<A::Error> = key.into_deserializer();
            return seed.deserialize(key).map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Inner {
        a: u64,
        b: String,
    }

    #[derive(Debug, Default, PartialEq)]
    struct Side {
        extra: Option<Vec<u32>>,
    }

    impl<'de> Sidecar<'de> for Side {
        fn takes(key: &str) -> bool {
            key == "extra"
        }
        fn read<A: MapAccess<'de>>(&mut self, _: &str, map: &mut A) -> Result<(), A::Error> {
            self.extra = Some(map.next_value()?);
            Ok(())
        }
    }

    #[test]
    fn split_takes_the_sidecar_fields_out() {
        let text = r#"{"b": "x", "extra": [1, 2], "a": 3, "unknown": {"deep": 1}}"#;
        let mut de = serde_json::Deserializer::from_str(text);
        let (inner, side): (Inner, Side) = split(&mut de).unwrap();
        assert_eq!(
            inner,
            Inner {
                a: 3,
                b: "x".into()
            }
        );
        assert_eq!(side.extra, Some(vec![1, 2]));
    }

    #[derive(Debug, Deserialize)]
    struct Counted {
        #[serde(with = "count")]
        n: u64,
    }

    #[test]
    fn counts_take_whole_floats_and_refuse_the_rest() {
        let n = |t: &str| serde_json::from_str::<Counted>(t).map(|c| c.n);
        assert_eq!(n(r#"{"n": 5}"#).unwrap(), 5);
        assert_eq!(n(r#"{"n": 5.0}"#).unwrap(), 5);
        for bad in [
            r#"{"n": -5}"#,
            r#"{"n": 2.5}"#,
            r#"{"n": 1e300}"#,
            r#"{"n": "twenty"}"#,
        ] {
            assert!(n(bad).is_err(), "{bad}");
        }
    }
}

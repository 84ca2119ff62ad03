//! Serde for an `f64` that may be non-finite, which JSON numbers cannot hold:
//! NaN and the infinities are written as `"nan"`, `"inf"` and `"-inf"`
//! (`#[serde(with = "devcheck_report::assert_close::non_finite")]`).

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserializer, Serializer};

pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.is_nan() {
        serializer.serialize_str("nan")
    } else if value.is_infinite() {
        serializer.serialize_str(if *value > 0.0 { "inf" } else { "-inf" })
    } else {
        serializer.serialize_f64(*value)
    }
}

pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    deserializer.deserialize_any(NumberOrName)
}

struct NumberOrName;

impl Visitor<'_> for NumberOrName {
    type Value = f64;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str(r#"a number, "nan", "inf" or "-inf""#)
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<f64, E> {
        Ok(value)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<f64, E> {
        Ok(value as f64)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<f64, E> {
        Ok(value as f64)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<f64, E> {
        match value {
            "nan" => Ok(f64::NAN),
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            other => Err(E::invalid_value(de::Unexpected::Str(other), &self)),
        }
    }
}

//! Typed reads of `config.json` fields with defaults, naming the field in every error.

use serde_json::{Map, Value};

use crate::error::EngineError;
use crate::error::Result;

pub(super) fn cfg_err(field: &str, reason: &str) -> EngineError {
    EngineError::Config {
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

pub(super) fn obj<'a>(
    o: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a Map<String, Value>>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(other) => Err(cfg_err(key, &format!("expected an object, found {other}"))),
    }
}

pub(super) fn opt_usize(o: &Map<String, Value>, key: &str, field: &str) -> Result<Option<usize>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(|n| Some(n as usize)).ok_or_else(|| {
            cfg_err(
                field,
                &format!("expected a non-negative integer, found {v}"),
            )
        }),
    }
}

pub(super) fn get_usize(
    o: &Map<String, Value>,
    key: &str,
    field: &str,
    default: Option<usize>,
) -> Result<usize> {
    opt_usize(o, key, field)?
        .or(default)
        .ok_or_else(|| cfg_err(field, "is required"))
}

pub(super) fn get_u32(
    o: &Map<String, Value>,
    key: &str,
    field: &str,
    default: Option<u32>,
) -> Result<u32> {
    let n = get_usize(o, key, field, default.map(|d| d as usize))?;
    u32::try_from(n).map_err(|_| cfg_err(field, &format!("{n} does not fit a token id")))
}

/// A token id field that may also be a list (transformers allows several EOS ids); the first one is used.
pub(super) fn first_id(
    o: &Map<String, Value>,
    key: &str,
    field: &str,
    default: u32,
) -> Result<u32> {
    match o.get(key) {
        Some(Value::Array(items)) => items
            .first()
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| cfg_err(field, "expected a non-empty list of token ids")),
        _ => get_u32(o, key, field, Some(default)),
    }
}

pub(super) fn get_f64(
    o: &Map<String, Value>,
    key: &str,
    field: &str,
    default: Option<f64>,
) -> Result<f64> {
    match o.get(key) {
        None | Some(Value::Null) => default.ok_or_else(|| cfg_err(field, "is required")),
        Some(v) => v
            .as_f64()
            .ok_or_else(|| cfg_err(field, &format!("expected a number, found {v}"))),
    }
}

pub(super) fn get_bool(
    o: &Map<String, Value>,
    key: &str,
    field: &str,
    default: Option<bool>,
) -> Result<bool> {
    match o.get(key) {
        None | Some(Value::Null) => default.ok_or_else(|| cfg_err(field, "is required")),
        Some(v) => v
            .as_bool()
            .ok_or_else(|| cfg_err(field, &format!("expected true or false, found {v}"))),
    }
}

pub(super) fn get_usize_list(o: &Map<String, Value>, key: &str, field: &str) -> Result<Vec<usize>> {
    let items = o
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| cfg_err(field, "expected a list of integers"))?;
    items
        .iter()
        .map(|v| {
            v.as_u64()
                .map(|n| n as usize)
                .ok_or_else(|| cfg_err(field, &format!("{v} is not an integer")))
        })
        .collect()
}

/// Fields whose other values would need code this engine does not have: refuse them instead of guessing.
pub(super) fn expect_str(o: &Map<String, Value>, key: &str, field: &str, want: &str) -> Result<()> {
    match o.get(key).and_then(Value::as_str) {
        Some(v) if v != want => Err(EngineError::UnsupportedConfig {
            field: field.into(),
            value: format!("{v:?}"),
            hint: format!("only {want:?} is implemented"),
        }),
        _ => Ok(()),
    }
}

pub(super) fn expect_bool(
    o: &Map<String, Value>,
    key: &str,
    field: &str,
    want: bool,
) -> Result<()> {
    match o.get(key).and_then(Value::as_bool) {
        Some(v) if v != want => Err(EngineError::UnsupportedConfig {
            field: field.into(),
            value: v.to_string(),
            hint: format!("only {want} is implemented"),
        }),
        _ => Ok(()),
    }
}

pub(super) fn expect_usize(
    o: &Map<String, Value>,
    key: &str,
    field: &str,
    want: usize,
) -> Result<()> {
    match o.get(key).and_then(Value::as_u64) {
        Some(v) if v as usize != want => Err(EngineError::UnsupportedConfig {
            field: field.into(),
            value: v.to_string(),
            hint: format!("only {want} is implemented"),
        }),
        _ => Ok(()),
    }
}

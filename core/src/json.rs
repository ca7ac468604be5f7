//! The JSON shape events carry. It sits apart so the kind table, which reads
//! metadata, does not import the event model that uses the table.

use serde_json::Value;

/// A JSON object: the shape of every payload and metadata block.
pub type JsonObject = serde_json::Map<String, Value>;

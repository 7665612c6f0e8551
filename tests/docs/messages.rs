//! The queue messages' kinds and fields, as serde sees them: no list to
//! keep beside the enums.
//!
//! - The kinds: serde names every variant when it refuses an unknown one.
//! - The required fields: serde names the first one missing; the probe
//!   adds a sample value for it and asks again, until the message reads.
//! - Every field: the message that read is written through a serializer
//!   that only records field names, the skipped optional ones included
//!   (serde reports those through `skip_field`).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde::ser::{self, Impossible};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// One kind of message, as the code defines it.
#[derive(Debug)]
pub struct Shape {
    pub kind: String,
    pub required: BTreeSet<String>,
    /// Required and optional.
    pub fields: BTreeSet<String>,
}

impl Shape {
    pub fn optional(&self) -> BTreeSet<String> {
        self.fields.difference(&self.required).cloned().collect()
    }
}

/// Every kind of `T` (a `#[serde(tag = "kind")]` enum) and its fields.
pub fn shapes<T: DeserializeOwned + Serialize>(type_name: &str) -> Vec<Shape> {
    kinds::<T>(type_name).into_iter().map(|kind| shape::<T>(type_name, &kind)).collect()
}

fn kinds<T: DeserializeOwned>(type_name: &str) -> Vec<String> {
    let refused = serde_json::from_value::<T>(json!({"kind": "no such kind"}))
        .err()
        .unwrap_or_else(|| panic!("{type_name} read a message of no known kind"))
        .to_string();
    let expected = refused
        .split_once("expected one of ")
        .or_else(|| refused.split_once("expected "))
        .unwrap_or_else(|| panic!("serde's refusal does not list {type_name}'s kinds: {refused}"))
        .1;
    expected.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

fn shape<T: DeserializeOwned + Serialize>(type_name: &str, kind: &str) -> Shape {
    let mut message = Map::new();
    message.insert("kind".into(), kind.into());
    let mut required = BTreeSet::new();
    let read = loop {
        match serde_json::from_value::<T>(Value::Object(message.clone())) {
            Ok(read) => break read,
            Err(err) => {
                let err = err.to_string();
                let field = err
                    .split_once("missing field `")
                    .and_then(|(_, rest)| rest.split_once('`'))
                    .map(|(field, _)| field.to_owned())
                    .unwrap_or_else(|| {
                        panic!("{type_name} `{kind}` does not read a sample ({err}); fix its sample in tests/docs/messages.rs")
                    });
                let value = sample(kind, &field).unwrap_or_else(|| {
                    panic!("{type_name} `{kind}` needs a field `{field}` that tests/docs/messages.rs has no sample value for: add one to `sample`")
                });
                assert!(
                    required.insert(field.clone()),
                    "{type_name} `{kind}`: the sample for `{field}` does not read ({err})"
                );
                message.insert(field, value);
            }
        }
    };
    let mut recorder = FieldNames::default();
    read.serialize(&mut recorder).unwrap_or_else(|err| panic!("{type_name} `{kind}`: {err}"));
    let fields = recorder.0.into_iter().filter(|field| field != "kind").collect();
    Shape { kind: kind.to_owned(), required, fields }
}

/// A value of the right type for `field` in a message of `kind`; none:
/// the probe stops and says which to add.
fn sample(kind: &str, field: &str) -> Option<Value> {
    let thread = json!({"team": "T1", "channel": "C1", "thread_ts": "1700000000.000100"});
    let tool_use = json!({"id": "tooluse_1", "name": "post_message", "input": {}});
    let grant = json!({"scope": "post_message", "granted_by": "U1", "turn_id": "T1-Ev1", "granted_at": 1, "until": 2});
    Some(match (kind, field) {
        (_, "thread") => thread,
        (_, "tool_use") => tool_use,
        (_, "grant") => grant,
        // An approval's button and a grant's revoke button: one sample
        // that reads as either.
        (_, "button") => json!({"turn_id": "T1-Ev1", "tool_use_id": "tooluse_1", "scope": "post_message"}),
        (_, "decision") => json!("approve"),
        (_, "rating") => json!("positive"),
        ("forget", "reason") => json!("app_uninstalled"),
        (_, "reason") => json!("not_connected"),
        (_, "source") => json!("alertmanager"),
        (_, "state") => json!("firing"),
        (_, "approvers") => json!(["requester"]),
        (_, "event") => json!({"id": "1"}),
        (_, "labels") => json!({}),
        (_, "after_step" | "step" | "at" | "expires_at" | "grant_minutes") => json!(1),
        (_, "own_request" | "destructive") => json!(false),
        (_, "membership") => json!("external"),
        (_, "files") => json!([]),
        (_, "command") => json!("/assistant"),
        (_, "question") => json!("why?"),
        (_, "response_url") => json!("https://hooks.slack.com/commands/T1/2/x"),
        (_, "asked_at") => json!(1),
        (
            _,
            "event_id" | "message_ts" | "user" | "text" | "turn_id" | "tool_use_id" | "action_ts" | "team" | "channel"
            | "thread_ts" | "id" | "fingerprint" | "delivery" | "title" | "summary" | "url" | "tool_name" | "requester"
            | "provider" | "owner" | "scope" | "context_channel" | "bot_user" | "disconnect" | "grant_scope" | "server"
            | "message" | "elicitation_id" | "form_id",
        ) => json!("x1"),
        _ => return None,
    })
}

/// A serializer that records the top-level field names of a struct and
/// nothing else.
#[derive(Default)]
struct FieldNames(Vec<String>);

#[derive(Debug)]
struct Unsupported(String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the field probe reads structs only: {}", self.0)
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<M: std::fmt::Display>(message: M) -> Self {
        Unsupported(message.to_string())
    }
}

impl ser::SerializeStruct for &mut FieldNames {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_field<V: Serialize + ?Sized>(&mut self, key: &'static str, _: &V) -> Result<(), Unsupported> {
        self.0.push(key.to_owned());
        Ok(())
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), Unsupported> {
        self.0.push(key.to_owned());
        Ok(())
    }

    fn end(self) -> Result<(), Unsupported> {
        Ok(())
    }
}

macro_rules! unsupported {
    ($($method:ident($($arg:ty),*)),* $(,)?) => {
        $(fn $method(self, $(_: $arg),*) -> Result<(), Unsupported> {
            Err(Unsupported(stringify!($method).into()))
        })*
    };
}

impl<'a> ser::Serializer for &'a mut FieldNames {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Impossible<(), Unsupported>;
    type SerializeTuple = Impossible<(), Unsupported>;
    type SerializeTupleStruct = Impossible<(), Unsupported>;
    type SerializeTupleVariant = Impossible<(), Unsupported>;
    type SerializeMap = Impossible<(), Unsupported>;
    type SerializeStruct = &'a mut FieldNames;
    type SerializeStructVariant = Impossible<(), Unsupported>;

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Unsupported> {
        Ok(self)
    }

    unsupported!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_some<V: Serialize + ?Sized>(self, _: &V) -> Result<(), Unsupported> {
        Err(Unsupported("an option".into()))
    }

    fn serialize_newtype_struct<V: Serialize + ?Sized>(self, _: &'static str, _: &V) -> Result<(), Unsupported> {
        Err(Unsupported("a newtype".into()))
    }

    fn serialize_newtype_variant<V: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &V,
    ) -> Result<(), Unsupported> {
        Err(Unsupported("a newtype variant".into()))
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Unsupported> {
        Err(Unsupported("a sequence".into()))
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Unsupported> {
        Err(Unsupported("a tuple".into()))
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, Unsupported> {
        Err(Unsupported("a tuple struct".into()))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsupported> {
        Err(Unsupported("a tuple variant".into()))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Unsupported> {
        Err(Unsupported("a map (a flattened field?)".into()))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Unsupported> {
        Err(Unsupported("a struct variant".into()))
    }
}

//! A server's form for the person who asked (MCP elicitation in form mode),
//! read from the `requestedSchema` the specification allows: a flat object
//! of text, numbers, booleans and choices. What the server sends is
//! untrusted: a schema outside that shape, or larger than a Slack modal
//! holds, is refused (the request is declined), titles and descriptions are
//! cut, and an answer is checked against the form before the server gets it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The most fields a form may have (a Slack modal holds 100 blocks; a form
/// longer than this is not one a person fills in a thread).
pub const MAX_FIELDS: usize = 20;
/// The most options a choice may offer (Slack's select menus hold 100).
pub const MAX_OPTIONS: usize = 100;
/// The longest text an answer may hold (Slack's text inputs hold 3,000).
pub const MAX_TEXT: usize = 3_000;
/// Labels are cut at this (Slack's limit for an input's label and hint is
/// 2,000; shorter reads better).
pub const MAX_LABEL: usize = 150;
/// An option's label and value are cut at Slack's 75.
pub const MAX_OPTION: usize = 75;

/// A form to fill in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Form {
    pub fields: Vec<Field>,
}

/// One field: its name in the answer, what the person reads, whether it
/// must be filled in, and what it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    pub name: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub required: bool,
    pub kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextFormat {
    Email,
    Uri,
    Date,
    DateTime,
}

/// An option of a choice: the value the server gets, the label people read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    pub value: String,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Kind {
    Text {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_length: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_length: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        format: Option<TextFormat>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default: Option<String>,
    },
    Number {
        integer: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        minimum: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        maximum: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default: Option<f64>,
    },
    Boolean {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default: Option<bool>,
    },
    /// One of the options.
    Choice {
        options: Vec<Choice>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default: Option<String>,
    },
    /// Some of the options.
    Choices {
        options: Vec<Choice>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_items: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_items: Option<usize>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        default: Vec<String>,
    },
}

fn cut(text: &str, most: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= most {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(most.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn text_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn count_of(value: &Value, key: &str) -> Result<Option<usize>, String> {
    match value.get(key) {
        None => Ok(None),
        Some(number) => number
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| format!("{key} is not a count")),
    }
}

/// Options from `enum` (with `enumNames`, the older titled form), `oneOf`
/// or `anyOf` of `{const, title}`.
fn options(schema: &Value) -> Result<Vec<Choice>, String> {
    let choices: Vec<Choice> = if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        values
            .iter()
            .enumerate()
            .map(|(at, value)| {
                let value = value.as_str().ok_or("an enum value is not text")?;
                let label = names.and_then(|names| names.get(at)).and_then(Value::as_str).unwrap_or(value);
                Ok(Choice { value: value.to_owned(), label: cut(label, MAX_OPTION) })
            })
            .collect::<Result<_, &str>>()?
    } else if let Some(titled) = schema.get("oneOf").or_else(|| schema.get("anyOf")).and_then(Value::as_array) {
        titled
            .iter()
            .map(|option| {
                let value = text_of(option, "const").ok_or("an option has no text const")?;
                let label = text_of(option, "title").unwrap_or(value);
                Ok(Choice { value: value.to_owned(), label: cut(label, MAX_OPTION) })
            })
            .collect::<Result<_, &str>>()?
    } else {
        return Err("a choice names no options".into());
    };
    if choices.is_empty() || choices.len() > MAX_OPTIONS {
        return Err(format!("a choice has no options or more than {MAX_OPTIONS}"));
    }
    if choices.iter().any(|choice| choice.value.chars().count() > MAX_OPTION || choice.value.is_empty()) {
        return Err(format!("an option's value is empty or longer than {MAX_OPTION} characters"));
    }
    Ok(choices)
}

fn kind(schema: &Value) -> Result<Kind, String> {
    let is_choice = schema.get("enum").is_some() || schema.get("oneOf").is_some();
    match text_of(schema, "type") {
        Some("string") if is_choice => {
            Ok(Kind::Choice { options: options(schema)?, default: text_of(schema, "default").map(str::to_owned) })
        }
        Some("string") => {
            let format = match text_of(schema, "format") {
                None => None,
                Some("email") => Some(TextFormat::Email),
                Some("uri") => Some(TextFormat::Uri),
                Some("date") => Some(TextFormat::Date),
                Some("date-time") => Some(TextFormat::DateTime),
                Some(_) => return Err("a text format this client does not know".into()),
            };
            let max_length = count_of(schema, "maxLength")?.map(|most| most.min(MAX_TEXT));
            Ok(Kind::Text {
                min_length: count_of(schema, "minLength")?,
                max_length,
                format,
                default: text_of(schema, "default").map(|text| cut(text, MAX_TEXT)),
            })
        }
        Some(number @ ("number" | "integer")) => {
            let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
            Ok(Kind::Number {
                integer: number == "integer",
                minimum: bound("minimum"),
                maximum: bound("maximum"),
                default: bound("default"),
            })
        }
        Some("boolean") => Ok(Kind::Boolean { default: schema.get("default").and_then(Value::as_bool) }),
        Some("array") => {
            let items = schema.get("items").ok_or("a list names no items")?;
            let default = match schema.get("default").and_then(Value::as_array) {
                Some(values) => values.iter().filter_map(|value| value.as_str().map(str::to_owned)).collect(),
                None => Vec::new(),
            };
            Ok(Kind::Choices {
                options: options(items)?,
                min_items: count_of(schema, "minItems")?,
                max_items: count_of(schema, "maxItems")?,
                default,
            })
        }
        _ => Err("a field is not text, a number, a boolean or a choice".into()),
    }
}

impl Form {
    /// The form a `requestedSchema` describes, or why it is not one.
    pub fn read(schema: &Value) -> Result<Self, String> {
        if text_of(schema, "type") != Some("object") {
            return Err("the schema is not an object".into());
        }
        let properties = schema.get("properties").and_then(Value::as_object).ok_or("the schema has no properties")?;
        if properties.is_empty() || properties.len() > MAX_FIELDS {
            return Err(format!("the form has no fields or more than {MAX_FIELDS}"));
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let fields = properties
            .iter()
            .map(|(name, property)| {
                if name.is_empty() || name.len() > 64 {
                    return Err("a field's name is empty or too long".to_owned());
                }
                Ok(Field {
                    name: name.clone(),
                    title: cut(text_of(property, "title").unwrap_or(name), MAX_LABEL),
                    description: text_of(property, "description").map(|text| cut(text, MAX_LABEL * 2)),
                    required: required.contains(&name.as_str()),
                    kind: kind(property)?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Self { fields })
    }

    /// Checks an answer against the form: every required field filled,
    /// nothing the form does not name, each value of its field's kind and
    /// within its bounds. The problems, by field, for the person to mend.
    pub fn check(&self, content: &Map<String, Value>) -> Result<(), Vec<(String, String)>> {
        let mut problems = Vec::new();
        for name in content.keys() {
            if !self.fields.iter().any(|field| &field.name == name) {
                problems.push((name.clone(), "not a field of this form".to_owned()));
            }
        }
        for field in &self.fields {
            match content.get(&field.name) {
                None | Some(Value::Null) if field.required => {
                    problems.push((field.name.clone(), "required".to_owned()));
                }
                None | Some(Value::Null) => {}
                Some(value) => {
                    if let Err(problem) = field.kind.check(value) {
                        problems.push((field.name.clone(), problem));
                    }
                }
            }
        }
        if problems.is_empty() { Ok(()) } else { Err(problems) }
    }
}

impl Kind {
    fn check(&self, value: &Value) -> Result<(), String> {
        match self {
            Kind::Text { min_length, max_length, format, .. } => {
                let text = value.as_str().ok_or("must be text")?;
                let length = text.chars().count();
                if length > max_length.unwrap_or(MAX_TEXT) {
                    return Err(format!("at most {} characters", max_length.unwrap_or(MAX_TEXT)));
                }
                if min_length.is_some_and(|least| length < least) {
                    return Err(format!("at least {} characters", min_length.unwrap_or_default()));
                }
                let well_formed = match format {
                    None => true,
                    Some(TextFormat::Email) => {
                        text.split_once('@').is_some_and(|(name, host)| !name.is_empty() && host.contains('.'))
                    }
                    Some(TextFormat::Uri) => text.split_once("://").is_some_and(|(scheme, rest)| {
                        !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric()) && !rest.is_empty()
                    }),
                    Some(TextFormat::Date) => {
                        crate::clock::unix_from_rfc3339(&format!("{text}T00:00:00Z")).is_some() && text.len() == 10
                    }
                    Some(TextFormat::DateTime) => crate::clock::unix_from_rfc3339(text).is_some(),
                };
                if well_formed { Ok(()) } else { Err("not in the form asked for".into()) }
            }
            Kind::Number { integer, minimum, maximum, .. } => {
                let number = value.as_f64().ok_or("must be a number")?;
                if *integer && number.fract() != 0.0 {
                    return Err("must be a whole number".into());
                }
                if minimum.is_some_and(|least| number < least) || maximum.is_some_and(|most| number > most) {
                    return Err("out of range".into());
                }
                Ok(())
            }
            Kind::Boolean { .. } => value.as_bool().map(|_| ()).ok_or_else(|| "must be yes or no".into()),
            Kind::Choice { options, .. } => {
                let chosen = value.as_str().ok_or("must be one of the options")?;
                if options.iter().any(|option| option.value == chosen) {
                    Ok(())
                } else {
                    Err("not one of the options".into())
                }
            }
            Kind::Choices { options, min_items, max_items, .. } => {
                let chosen = value.as_array().ok_or("must be a list of options")?;
                if chosen.iter().any(|item| !options.iter().any(|option| Some(option.value.as_str()) == item.as_str()))
                {
                    return Err("not one of the options".into());
                }
                if min_items.is_some_and(|least| chosen.len() < least)
                    || max_items.is_some_and(|most| chosen.len() > most)
                {
                    return Err("too few or too many chosen".into());
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests;

/// A form waiting for the person who asked, as the table keeps it
/// (`ELICIT#{id}` / `FORM`): written by the worker before the person is
/// shown a button, read by the ingress to open the modal and to take the
/// answer, bound to that person and team.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingForm {
    pub id: String,
    pub team: slack::TeamId,
    pub user: slack::UserId,
    /// The configuration's name for the server that asks.
    pub server: String,
    /// The server's message, cut, shown as plain text.
    pub message: String,
    pub form: Form,
    /// Unix seconds: no answer is taken after it.
    pub expires_at: i64,
    pub state: FormState,
}

/// Where a form stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum FormState {
    Open,
    Answered {
        content: Map<String, Value>,
    },
    Declined,
    /// Nobody answered in time (the worker closed it).
    Expired,
}

/// Why an answer to a form was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotTaken {
    #[error("there is no such form")]
    Unknown,
    /// Someone other than the person who asked, or of another team.
    #[error("this form is for someone else")]
    NotYours,
    #[error("this form was already answered or declined")]
    Settled,
    #[error("this form has expired")]
    Expired,
}

/// The forms waiting for people, on the turns table.
#[derive(Clone)]
pub struct Forms {
    records: std::sync::Arc<dyn crate::ports::VersionedRecords>,
}

/// How long a form's record outlives its expiry.
pub const FORM_KEPT_SECS: i64 = 24 * 3600;

impl Forms {
    pub fn new(records: std::sync::Arc<dyn crate::ports::VersionedRecords>) -> Self {
        Self { records }
    }

    /// Keeps `form` open, before the person is shown its button.
    pub async fn open(&self, form: &PendingForm) -> Result<(), crate::ports::PortError> {
        let state = serde_json::to_string(form).expect("a form is JSON");
        let key = crate::keys::form(&form.id);
        match crate::store::put_versioned(self.records.as_ref(), &key, 0, state, form.expires_at + FORM_KEPT_SECS)
            .await?
        {
            crate::ports::Put::Written => Ok(()),
            crate::ports::Put::Conflict { .. } => {
                Err(crate::ports::PortError::new("form", "a form of this id was opened before"))
            }
        }
    }

    /// The form and its version, if there is one.
    pub async fn get(&self, id: &str) -> Result<Option<(u64, PendingForm)>, crate::ports::PortError> {
        let Some(stored) = self.records.get(&crate::keys::form(id)).await? else { return Ok(None) };
        let form =
            serde_json::from_str(&stored.state).map_err(|err| crate::ports::PortError::new("form", err.to_string()))?;
        Ok(Some((stored.version, form)))
    }

    /// The form for `user` of `team` to answer now, or why not.
    pub async fn answerable(
        &self,
        id: &str,
        team: &slack::TeamId,
        user: &slack::UserId,
        now: i64,
    ) -> Result<Result<(u64, PendingForm), NotTaken>, crate::ports::PortError> {
        let Some((version, form)) = self.get(id).await? else { return Ok(Err(NotTaken::Unknown)) };
        if &form.team != team || &form.user != user {
            return Ok(Err(NotTaken::NotYours));
        }
        if form.state != FormState::Open {
            return Ok(Err(NotTaken::Settled));
        }
        if now >= form.expires_at {
            return Ok(Err(NotTaken::Expired));
        }
        Ok(Ok((version, form)))
    }

    /// Settles form `id` as `state`, where `user` of `team` may (the person
    /// who asked, before it expires; the worker closing it as
    /// [`FormState::Expired`] passes the form's own person). A lost answer
    /// finds its own write; a race with another settlement is
    /// [`NotTaken::Settled`].
    pub async fn settle(
        &self,
        id: &str,
        team: &slack::TeamId,
        user: &slack::UserId,
        state: FormState,
        now: i64,
    ) -> Result<Result<(), NotTaken>, crate::ports::PortError> {
        let expiring = state == FormState::Expired;
        let (version, mut form) = match self.answerable(id, team, user, if expiring { i64::MIN } else { now }).await? {
            Ok(found) => found,
            Err(not) => return Ok(Err(not)),
        };
        form.state = state;
        let json = serde_json::to_string(&form).expect("a form is JSON");
        let key = crate::keys::form(id);
        match crate::store::put_versioned(self.records.as_ref(), &key, version, json, form.expires_at + FORM_KEPT_SECS)
            .await?
        {
            crate::ports::Put::Written => Ok(Ok(())),
            crate::ports::Put::Conflict { .. } => Ok(Err(NotTaken::Settled)),
        }
    }
}

//! Forms MCP servers ask people to fill in (elicitation in form mode), as
//! Slack shows them: the person who asked clicks **Answer** on the message
//! only they see; the ingress reads the waiting form (`ELICIT#{id}`),
//! checks the click is theirs, and opens it as a modal; the submission is
//! read back into the answer the server's schema describes, checked, and
//! kept for the worker, which is waiting for it. **Decline** keeps a
//! refusal. Someone else's click, a second answer, or one after the form
//! expired changes nothing and is told why.

use assistant_core::elicitation::{Choice, Field, Form, Kind, PendingForm, TextFormat};
use serde_json::{Map, Value, json};

/// The modal's `callback_id`.
pub const FORM_CALLBACK_ID: &str = "mcp_form";

/// Whether `id` is a form id of the worker's making (hex, 16 to 40).
pub fn well_formed_id(id: &str) -> bool {
    (16..=40).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A form's modal submitted: the person and their workspace as Slack
/// signed them, the form the modal names.
pub fn route_submission(submission: &slack::ask_modal::ViewSubmission) -> crate::route::Route {
    use crate::route::{Ignored, Route};
    let form = &submission.view.private_metadata;
    if !well_formed_id(form) {
        return Route::Ignore(Ignored::UnreadableForm);
    }
    let Some(team) = slack::interaction::workspace_of(&submission.team, &submission.user) else {
        return Route::Ignore(Ignored::NoWorkspace);
    };
    Route::FormSubmit {
        team: team.clone(),
        user: submission.user.id.clone(),
        form: form.clone(),
        values: submission.view.state.values.clone(),
    }
}
/// Each input's `action_id` (its block is `f{index}`).
const INPUT: &str = "v";

fn plain(text: &str) -> Value {
    json!({"type": "plain_text", "text": text, "emoji": false})
}

fn option(choice: &Choice) -> Value {
    json!({"text": plain(&choice.label), "value": choice.value})
}

/// A modal title: at most 24 characters.
fn title(server: &str) -> String {
    let mut title: String = format!("{server} asks").chars().take(24).collect();
    if title.trim().is_empty() {
        title = "A question".into();
    }
    title
}

fn element(field: &Field) -> Value {
    let mut element = match &field.kind {
        Kind::Text { format: Some(TextFormat::Email), default, .. } => {
            json!({"type": "email_text_input", "initial_value": default})
        }
        Kind::Text { format: Some(TextFormat::Uri), default, .. } => {
            json!({"type": "url_text_input", "initial_value": default})
        }
        Kind::Text { format: Some(TextFormat::Date), default, .. } => {
            json!({"type": "datepicker", "initial_date": default})
        }
        Kind::Text { format: Some(TextFormat::DateTime), default, .. } => {
            let initial = default.as_deref().and_then(assistant_core::clock::unix_from_rfc3339);
            json!({"type": "datetimepicker", "initial_date_time": initial})
        }
        Kind::Text { min_length, max_length, default, .. } => json!({
            "type": "plain_text_input",
            "multiline": max_length.is_none_or(|most| most > 150),
            "min_length": min_length,
            "max_length": max_length.unwrap_or(assistant_core::elicitation::MAX_TEXT),
            "initial_value": default,
        }),
        Kind::Number { integer, minimum, maximum, default } => json!({
            "type": "number_input",
            "is_decimal_allowed": !integer,
            "min_value": minimum.map(|n| n.to_string()),
            "max_value": maximum.map(|n| n.to_string()),
            "initial_value": default.map(|n| n.to_string()),
        }),
        Kind::Boolean { default } => {
            let yes = json!({"text": plain("Yes"), "value": "true"});
            json!({"type": "checkboxes", "options": [yes.clone()],
                   "initial_options": default.filter(|on| *on).map(|_| vec![yes])})
        }
        Kind::Choice { options, default } => json!({
            "type": "static_select",
            "options": options.iter().map(option).collect::<Vec<_>>(),
            "initial_option": default.as_ref().and_then(|value| options.iter().find(|o| &o.value == value)).map(option),
        }),
        Kind::Choices { options, max_items, default, .. } => {
            let initial: Vec<Value> = options.iter().filter(|o| default.contains(&o.value)).map(option).collect();
            json!({
                "type": "multi_static_select",
                "options": options.iter().map(option).collect::<Vec<_>>(),
                "max_selected_items": max_items,
                "initial_options": (!initial.is_empty()).then_some(initial),
            })
        }
    };
    let object = element.as_object_mut().expect("an element is an object");
    object.retain(|_, value| !value.is_null());
    object.insert("action_id".into(), json!(INPUT));
    element
}

/// The modal for `pending`: the server's message as plain text, then one
/// input per field.
pub fn modal(pending: &PendingForm) -> Value {
    let mut blocks = vec![json!({"type": "section", "text": plain(&pending.message)})];
    for (at, field) in pending.form.fields.iter().enumerate() {
        let mut block = json!({
            "type": "input",
            "block_id": format!("f{at}"),
            "label": plain(&field.title),
            "element": element(field),
            // A checkbox left unticked is `false`, never missing.
            "optional": !field.required || matches!(field.kind, Kind::Boolean { .. }),
        });
        if let Some(description) = &field.description {
            block["hint"] = plain(description);
        }
        blocks.push(block);
    }
    json!({
        "type": "modal",
        "callback_id": FORM_CALLBACK_ID,
        "private_metadata": pending.id,
        "title": plain(&title(&pending.server)),
        "submit": plain("Send"),
        "close": plain("Cancel"),
        "blocks": blocks,
    })
}

/// The answer a submitted modal holds (`view.state.values`), in the
/// server's field names and types. What does not read (a number that is
/// not one) is left as text, for [`Form::check`] to name.
pub fn answer(form: &Form, values: &Value) -> Map<String, Value> {
    let mut answer = Map::new();
    for (at, field) in form.fields.iter().enumerate() {
        let input = &values[format!("f{at}")][INPUT];
        let value = match &field.kind {
            Kind::Text { format: Some(TextFormat::Date), .. } => input["selected_date"].clone(),
            Kind::Text { format: Some(TextFormat::DateTime), .. } => input["selected_date_time"]
                .as_i64()
                .map_or(Value::Null, |unix| json!(assistant_core::clock::iso8601_utc(unix))),
            Kind::Text { .. } => input["value"].clone(),
            Kind::Number { .. } => match input["value"].as_str() {
                None => Value::Null,
                Some(text) => match text.parse::<f64>() {
                    Ok(n) if n.fract() == 0.0 && n.abs() < 9e15 => json!(n as i64),
                    Ok(n) => serde_json::Number::from_f64(n).map_or(json!(text), Value::Number),
                    Err(_) => json!(text),
                },
            },
            Kind::Boolean { .. } => {
                json!(input["selected_options"].as_array().is_some_and(|chosen| !chosen.is_empty()))
            }
            Kind::Choice { .. } => input["selected_option"]["value"].clone(),
            Kind::Choices { .. } => match input["selected_options"].as_array() {
                Some(chosen) => json!(chosen.iter().map(|option| option["value"].clone()).collect::<Vec<_>>()),
                None => Value::Null,
            },
        };
        if !value.is_null() {
            answer.insert(field.name.clone(), value);
        }
    }
    answer
}

/// A modal that says why a form cannot be answered (opened on a click, or
/// put in place of the form on a submission).
pub fn notice(why: &assistant_core::elicitation::NotTaken) -> Value {
    use assistant_core::elicitation::NotTaken;
    let text = match why {
        NotTaken::Unknown | NotTaken::NotYours => "This form is not one you can answer.",
        NotTaken::Settled => "This form was already answered or declined: nothing more was sent.",
        NotTaken::Expired => "This form has expired: nothing was sent. Ask again to start over.",
    };
    json!({
        "type": "modal",
        "title": plain("A server's form"),
        "close": plain("Close"),
        "blocks": [{"type": "section", "text": plain(text)}],
    })
}

/// Slack's answer to a submission whose fields do not hold: the modal stays
/// open, each problem under its field.
pub fn errors(form: &Form, problems: &[(String, String)]) -> Value {
    let mut errors = Map::new();
    for (name, problem) in problems {
        let block = match form.fields.iter().position(|field| &field.name == name) {
            Some(at) => format!("f{at}"),
            None => continue,
        };
        errors.insert(block, json!(problem));
    }
    json!({"response_action": "errors", "errors": errors})
}

#[cfg(test)]
mod tests;

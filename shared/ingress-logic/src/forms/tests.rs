use super::*;
use assistant_core::elicitation::FormState;

fn pending(schema: Value) -> PendingForm {
    PendingForm {
        id: "f0a1b2c3".into(),
        team: slack::TeamId::new("T1"),
        user: slack::UserId::new("U1"),
        server: "a-rather-long-server-name".into(),
        message: "Which environment? <!channel>".into(),
        form: Form::read(&schema).unwrap(),
        expires_at: 1_800_000_000,
        state: FormState::Open,
    }
}

fn schema() -> Value {
    json!({"type": "object", "required": ["env", "count"], "properties": {
        "env": {"type": "string", "title": "Environment", "oneOf": [{"const": "prod", "title": "Production"},
                                                                    {"const": "stg", "title": "Staging"}], "default": "stg"},
        "count": {"type": "integer", "title": "How many", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "title": "Ratio"},
        "notify": {"type": "boolean", "title": "Notify the channel", "default": true},
        "email": {"type": "string", "format": "email", "title": "Email"},
        "day": {"type": "string", "format": "date", "title": "Day"},
        "when": {"type": "string", "format": "date-time", "title": "When"},
        "tags": {"type": "array", "title": "Tags", "maxItems": 2, "items": {"type": "string", "enum": ["a", "b", "c"]}},
        "note": {"type": "string", "title": "Note", "description": "Anything else", "maxLength": 100}
    }})
}

#[test]
fn the_modal_has_one_input_per_field_the_message_as_plain_text_and_the_forms_id() {
    let view = modal(&pending(schema()));
    assert_eq!(
        (view["callback_id"].as_str(), view["private_metadata"].as_str()),
        (Some(FORM_CALLBACK_ID), Some("f0a1b2c3"))
    );
    assert!(view["title"]["text"].as_str().unwrap().chars().count() <= 24);
    let blocks = view["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 10);
    assert_eq!(
        blocks[0]["text"],
        json!({"type": "plain_text", "text": "Which environment? <!channel>", "emoji": false})
    );
    let element = |label: &str| {
        let block = blocks.iter().find(|block| block["label"]["text"] == label).unwrap();
        (block["element"].clone(), block["optional"].as_bool().unwrap())
    };
    let (env, optional) = element("Environment");
    assert_eq!((env["type"].as_str(), optional), (Some("static_select"), false));
    assert_eq!(env["initial_option"]["value"], "stg");
    let (count, _) = element("How many");
    assert_eq!((count["is_decimal_allowed"].as_bool(), count["max_value"].as_str()), (Some(false), Some("10")));
    let (notify, optional) = element("Notify the channel");
    assert_eq!(
        (notify["type"].as_str(), optional, notify["initial_options"][0]["value"].as_str()),
        (Some("checkboxes"), true, Some("true"))
    );
    assert_eq!(element("Email").0["type"], "email_text_input");
    assert_eq!(element("Day").0["type"], "datepicker");
    assert_eq!(element("When").0["type"], "datetimepicker");
    assert_eq!(element("Tags").0["max_selected_items"], 2);
    let (note, _) = element("Note");
    assert_eq!(
        (note["type"].as_str(), note["max_length"].as_u64(), note["multiline"].as_bool()),
        (Some("plain_text_input"), Some(100), Some(false))
    );
    assert!(blocks.iter().all(|block| block["element"].as_object().is_none_or(|e| e.values().all(|v| !v.is_null()))));
}

#[test]
fn a_submission_reads_back_in_the_servers_names_and_types_and_bad_values_are_named_under_their_fields() {
    let form = pending(schema()).form;
    let at = |name: &str| format!("f{}", form.fields.iter().position(|field| field.name == name).unwrap());
    let mut values = Map::new();
    values.insert(at("env"), json!({"v": {"type": "static_select", "selected_option": {"value": "prod"}}}));
    values.insert(at("count"), json!({"v": {"type": "number_input", "value": "3"}}));
    values.insert(at("ratio"), json!({"v": {"type": "number_input", "value": "0.25"}}));
    values.insert(at("notify"), json!({"v": {"type": "checkboxes", "selected_options": []}}));
    values.insert(at("day"), json!({"v": {"type": "datepicker", "selected_date": "2026-11-28"}}));
    values.insert(at("when"), json!({"v": {"type": "datetimepicker", "selected_date_time": 1795901400}}));
    values.insert(at("tags"), json!({"v": {"type": "multi_static_select", "selected_options": [{"value": "a"}]}}));
    values.insert(at("note"), json!({"v": {"type": "plain_text_input", "value": null}}));
    let answer = answer(&form, &Value::Object(values.clone()));
    assert_eq!(
        Value::Object(answer.clone()),
        json!({"env": "prod", "count": 3, "ratio": 0.25, "notify": false, "day": "2026-11-28",
               "when": "2026-11-28T21:30:00Z", "tags": ["a"]})
    );
    assert_eq!(form.check(&answer), Ok(()));

    // A forged submission: an option the form never offered, a count out of range
    values.insert(at("env"), json!({"v": {"selected_option": {"value": "root"}}}));
    values.insert(at("count"), json!({"v": {"value": "11"}}));
    let forged = super::answer(&form, &Value::Object(values));
    let problems = form.check(&forged).unwrap_err();
    let said = errors(&form, &problems);
    assert_eq!(said["response_action"], "errors");
    assert!(said["errors"][at("env")].is_string() && said["errors"][at("count")].is_string(), "{said}");
}

use super::*;
use serde_json::json;

/// The schema the MCP project's reference server sends
/// (`trigger-elicitation-request`): every kind of field the specification allows.
fn reference_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"title": "String", "type": "string", "description": "Your full, legal name"},
            "check": {"title": "Boolean", "type": "boolean", "description": "Agree to the terms and conditions"},
            "firstLine": {"title": "String with default", "type": "string", "default": "It was a dark and stormy night."},
            "email": {"title": "String with email format", "type": "string", "format": "email"},
            "homepage": {"type": "string", "format": "uri", "title": "String with uri format"},
            "birthdate": {"title": "String with date format", "type": "string", "format": "date"},
            "integer": {"title": "Integer", "type": "integer", "minimum": 1, "maximum": 100, "default": 42},
            "number": {"title": "Number in range 1-1000", "type": "number", "minimum": 0, "maximum": 1000, "default": 2.5},
            "untitledSingleSelectEnum": {"type": "string", "title": "Untitled Single Select Enum",
                "enum": ["Monica", "Rachel", "Joey", "Chandler", "Ross", "Phoebe"], "default": "Monica"},
            "untitledMultipleSelectEnum": {"type": "array", "title": "Untitled Multiple Select Enum", "minItems": 1,
                "maxItems": 3, "items": {"type": "string", "enum": ["Guitar", "Piano", "Violin", "Drums", "Bass"]},
                "default": ["Guitar"]},
            "titledSingleSelectEnum": {"type": "string", "title": "Titled Single Select Enum",
                "oneOf": [{"const": "hero-1", "title": "Superman"}, {"const": "hero-2", "title": "Green Lantern"}],
                "default": "hero-1"},
            "titledMultipleSelectEnum": {"type": "array", "title": "Titled Multiple Select Enum", "minItems": 1,
                "maxItems": 3, "items": {"anyOf": [{"const": "fish-1", "title": "Tuna"}, {"const": "fish-2", "title": "Salmon"}]},
                "default": ["fish-1"]},
            "legacyTitledEnum": {"type": "string", "title": "Legacy Titled Single Select Enum",
                "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"], "default": "pet-1"}
        },
        "required": ["name"]
    })
}

#[test]
fn the_reference_servers_form_is_read_field_by_field() {
    let form = Form::read(&reference_schema()).unwrap();
    assert_eq!(form.fields.len(), 13);
    let field = |name: &str| form.fields.iter().find(|field| field.name == name).unwrap();
    assert!(field("name").required && !field("email").required);
    assert!(matches!(field("email").kind, Kind::Text { format: Some(TextFormat::Email), .. }));
    assert!(matches!(field("birthdate").kind, Kind::Text { format: Some(TextFormat::Date), .. }));
    assert!(matches!(
        field("integer").kind,
        Kind::Number { integer: true, minimum: Some(1.0), maximum: Some(100.0), .. }
    ));
    assert!(matches!(field("check").kind, Kind::Boolean { default: None }));
    let Kind::Choice { options, default } = &field("legacyTitledEnum").kind else { panic!("a choice") };
    assert_eq!(
        (options[1].label.as_str(), options[1].value.as_str(), default.as_deref()),
        ("Dogs", "pet-2", Some("pet-1"))
    );
    let Kind::Choices { options, max_items, default, .. } = &field("titledMultipleSelectEnum").kind else { panic!() };
    assert_eq!(
        (options[0].label.as_str(), *max_items, default.as_slice()),
        ("Tuna", Some(3), ["fish-1".to_owned()].as_slice())
    );
}

#[test]
fn an_answer_is_checked_against_the_form_and_each_problem_named() {
    let form = Form::read(&reference_schema()).unwrap();
    let answer = |value: Value| value.as_object().unwrap().clone();
    let good = answer(json!({"name": "Ada", "check": true, "email": "ada@example.com", "homepage": "https://ada.dev",
        "birthdate": "1815-12-10", "integer": 7, "number": 2.5, "untitledMultipleSelectEnum": ["Piano"],
        "titledSingleSelectEnum": "hero-2"}));
    assert_eq!(form.check(&good), Ok(()));
    let bad = answer(json!({"email": "not-an-email", "integer": 7.5, "number": 5000, "birthdate": "10/12/1815",
        "untitledSingleSelectEnum": "Gunther", "untitledMultipleSelectEnum": ["Piano", "Guitar", "Bass", "Drums"],
        "check": "yes", "homepage": "javascript", "extra": 1}));
    let problems = form.check(&bad).unwrap_err();
    let named: Vec<&str> = problems.iter().map(|(name, _)| name.as_str()).collect();
    for name in [
        "extra",
        "name",
        "email",
        "integer",
        "number",
        "birthdate",
        "untitledSingleSelectEnum",
        "untitledMultipleSelectEnum",
        "check",
        "homepage",
    ] {
        assert!(named.contains(&name), "{name}: {problems:?}");
    }
}

#[test]
fn a_schema_outside_the_specifications_shape_or_too_large_is_refused() {
    let with = |properties: Value| json!({"type": "object", "properties": properties});
    let many: Map<String, Value> = (0..=MAX_FIELDS).map(|n| (format!("f{n}"), json!({"type": "string"}))).collect();
    let options: Vec<String> = (0..=MAX_OPTIONS).map(|n| format!("o{n}")).collect();
    for schema in [
        json!({"type": "array"}),
        with(json!({})),
        with(Value::Object(many)),
        with(json!({"nested": {"type": "object", "properties": {}}})),
        with(json!({"when": {"type": "string", "format": "hostname"}})),
        with(json!({"pick": {"type": "string", "enum": options}})),
        with(json!({"pick": {"type": "string", "enum": [1, 2]}})),
        with(json!({"pick": {"type": "string", "oneOf": [{"title": "no const"}]}})),
        with(json!({"pick": {"type": "string", "enum": ["x".repeat(MAX_OPTION + 1)]}})),
        with(json!({"list": {"type": "array"}})),
        with(json!({"size": {"type": "string", "maxLength": -1}})),
    ] {
        assert!(Form::read(&schema).is_err(), "{schema}");
    }
}

#[test]
fn long_titles_and_texts_are_cut_and_a_maximum_never_passes_slacks() {
    let schema = json!({"type": "object", "properties": {
        "essay": {"type": "string", "title": "t".repeat(1_000), "maxLength": 100_000, "default": "d".repeat(10_000)}
    }});
    let form = Form::read(&schema).unwrap();
    let field = &form.fields[0];
    assert_eq!(field.title.chars().count(), MAX_LABEL);
    let Kind::Text { max_length, default, .. } = &field.kind else { panic!() };
    assert_eq!(*max_length, Some(MAX_TEXT));
    assert_eq!(default.as_ref().unwrap().chars().count(), MAX_TEXT);
}

//! Checks the assistant configuration's parts share (`worker-config`, the
//! enhancer, alerts, schedules): where a configuration object may live,
//! and a named list's bounds.

/// Where the objects a configuration names (prompts, the service catalog)
/// must live: of the bucket, the worker's role reads configuration under
/// `config/` alone (`docs/` holds the team's documents, `turns/` and
/// `cache/` its own; template.yaml). A key elsewhere would parse here and
/// be refused by IAM in AWS.
pub const CONFIGURATION_OBJECTS: &str = "config/";

/// `key`, when it names an object under [`CONFIGURATION_OBJECTS`].
pub fn readable_object(key: &str) -> Result<(), String> {
    if key.starts_with(CONFIGURATION_OBJECTS) && key.len() > CONFIGURATION_OBJECTS.len() {
        Ok(())
    } else {
        Err(format!(
            "must name an object under {CONFIGURATION_OBJECTS} (the worker's role reads no other configuration object)"
        ))
    }
}

/// A configuration list of at most `max` entries whose names differ.
pub fn named_list<T>(items: Vec<T>, field: &str, max: usize, name: impl Fn(&T) -> &str) -> Result<Vec<T>, String> {
    if items.len() > max {
        return Err(format!("{field}: at most {max}"));
    }
    for (n, item) in items.iter().enumerate() {
        if items[..n].iter().any(|earlier| name(earlier) == name(item)) {
            return Err(format!("{field}: two are named {}", name(item)));
        }
    }
    Ok(items)
}

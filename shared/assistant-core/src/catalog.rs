//! The services a team runs, as the configuration's `service_catalog_key`
//! object lists them: the enhancer resolves a question's services with
//! it, `logs_query` finds a service's log groups.

use serde::Deserialize;

/// The services a team runs (`service_catalog_key` in the bucket):
/// `{"services": [{"name", "aliases", "owners", "log_groups", "dashboards"}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceCatalog {
    pub services: Vec<CatalogService>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogService {
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub owners: Vec<String>,
    #[serde(default)]
    pub log_groups: Vec<String>,
    #[serde(default)]
    pub dashboards: Vec<String>,
}

impl ServiceCatalog {
    /// The service named `name` or one of its aliases (case and spaces do
    /// not matter).
    pub fn find(&self, name: &str) -> Option<&CatalogService> {
        let wanted = normalize(name);
        self.services.iter().find(|service| {
            std::iter::once(&service.name).chain(&service.aliases).any(|known| normalize(known) == wanted)
        })
    }
}

fn normalize(name: &str) -> String {
    name.trim().to_lowercase().replace([' ', '_'], "-")
}

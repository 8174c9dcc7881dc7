//! The runbook file as written: every field that later checks can refuse keeps its position
//! ([`Spanned`]), so a refusal names file, line and column. The JSON Schema is generated from
//! these types (`schema/runbook.schema.json`).

use std::collections::BTreeMap;

use marked_yaml::Spanned;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One runbook file (`runbooks/<id>.yaml`).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunbookFile {
    /// Stable id, kebab-case; the file is named after it.
    #[schemars(with = "String")]
    pub id: Spanned<String>,
    /// One line shown in lists.
    pub title: String,
    /// The spec section the runbook follows, such as `002 "The automation hold"`.
    pub spec: String,
    /// CEL over `group` (see the crate README for the view): the runbook is offered when true.
    #[schemars(with = "String")]
    pub applies_when: Spanned<String>,
    /// How urgent the situation is; applicable runbooks are ranked by it.
    pub severity: Severity,
    /// Whether following the runbook can lose data, and the sentence that says so.
    pub data_loss_risk: DataLossRisk,
    /// The steps, walked in order unless a branch says otherwise.
    pub steps: Vec<StepFile>,
}

/// How urgent a runbook's situation is (ranked highest first): the verdict's scale, so a
/// finding and the runbook that answers it compare directly.
pub use bloodraven_facts::verdict::Severity;

/// The data-loss statement.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DataLossRisk {
    /// The level.
    pub level: RiskLevel,
    /// The sentence the console shows before the first action.
    pub sentence: String,
}

/// Whether a runbook can lose data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RiskLevel {
    /// No step discards data.
    None,
    /// A choice in the runbook can discard transactions; the step says which.
    Possible,
}

/// One step as written.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepFile {
    /// Step id, unique in the runbook; branches name it.
    #[schemars(with = "String")]
    pub id: Spanned<String>,
    /// Short Markdown shown for the step.
    pub explain: String,
    /// A predicate over the observed group, with its expected value.
    #[serde(default)]
    pub check: Option<CheckFile>,
    /// A guided operation of the console, by name; never a free-form command.
    #[serde(default)]
    pub action: Option<ActionFile>,
    /// What to wait for after the action.
    #[serde(default)]
    pub expect: Option<ExpectFile>,
    /// The next step by the check's result; absent means the next step in order.
    #[serde(default)]
    pub branches: Option<BranchesFile>,
}

/// `steps[].check`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckFile {
    /// CEL over `group` evaluating to a boolean.
    #[schemars(with = "String")]
    pub expr: Spanned<String>,
    /// The value the check passes with (default `true`).
    #[serde(default = "yes")]
    pub expect: bool,
    /// What a failed check means, shown in red.
    pub meaning: String,
}

fn yes() -> bool {
    true
}

/// `steps[].action`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActionFile {
    /// The guided operation (see [`crate::Action`] for the closed list).
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// Parameters: each a CEL expression over `group` (a string for sites and run ids).
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub params: BTreeMap<String, Spanned<String>>,
}

/// `steps[].expect`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpectFile {
    /// CEL over `group`: the wait ends when it is true.
    #[schemars(with = "String")]
    pub expr: Spanned<String>,
    /// How long to wait, a Go duration such as `5m`.
    #[schemars(with = "String")]
    pub timeout: Spanned<String>,
}

/// `steps[].branches`: where to go by the check's result. A target is a step id or `done`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BranchesFile {
    /// Next step when the check passes.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub on_pass: Option<Spanned<String>>,
    /// Next step when the check fails.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub on_fail: Option<Spanned<String>>,
}

//! Component selection: the session option `<family>.exec_plan` (feature `std`).
//!
//! The value is JSON naming, per component of a model family, the implementation it runs
//! on, e.g. `{"decoder":{"impl":"portable"}}` for `moonshine_asr`:
//!
//! | family | components |
//! |---|---|
//! | `openwakeword` | `embedding` (the mel frontend and the heads follow it) |
//! | `moonshine_asr` | `encoder` (stem, layers, cross-attention keys and values), `decoder` (layers, LM head) |
//! | `sanotts` | `decoder` |
//! | `silero_vad` | `network` (the voice-activity network; its segment rule is plain code) |
//!
//! Rules ([`parse_impl_choices`]):
//! - Omission, `{}`, the string `"default"`, a component given as `"default"` or as
//!   `{"impl":"default"}` keep the default: [`BackendKind::best`] (`neon` on aarch64 in a
//!   build with feature `neon`, `x86` at the best level of an x86-64 CPU with AVX2 and FMA,
//!   else `portable`).
//! - `impl` is one of [`Impl::NAMES`]. `neon` needs an aarch64 CPU and a build with feature
//!   `neon`, `x86` an x86-64 CPU with AVX2 and FMA (it runs at the CPU's best level,
//!   AVX-512F where present): otherwise the error names what is missing. A component may be
//!   given as its impl name alone (`{"decoder":"portable"}`).
//! - An optional `backend` must be the session's, [`SESSION_BACKEND`] (`"cpu"`).
//! - `artifacts` and `parameters` (compiled artifacts and tuning parameters in the seed's
//!   schema) are refused: neon compiles its plans ahead of time.
//! - Unknown components, impls and keys are errors listing the valid names; malformed JSON
//!   is an error with its line and column.
//!
//! The semantics are DESIGN.md's ("models"); each component picks its backend once, at
//! construction, and dispatches once per call, never per kernel.

use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

use neon_runtime::kernels::cpu::X86Level;
use neon_runtime::BackendKind;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The only backend a session has: the CPU.
pub const SESSION_BACKEND: &str = "cpu";

/// A model family whose components can be selected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// openWakeWord: component `embedding`.
    OpenWakeWord,
    /// Moonshine speech recognition: components `encoder` and `decoder`.
    MoonshineAsr,
    /// The sanoTTS vocoder: component `decoder`.
    SanoTts,
    /// Silero VAD: component `network`.
    SileroVad,
}

impl Family {
    /// Every family.
    pub const ALL: [Family; 4] =
        [Family::OpenWakeWord, Family::MoonshineAsr, Family::SanoTts, Family::SileroVad];

    /// The family's name in session option keys (`openwakeword`, `moonshine_asr`, `sanotts`,
    /// `silero_vad`).
    pub const fn name(self) -> &'static str {
        match self {
            Family::OpenWakeWord => "openwakeword",
            Family::MoonshineAsr => "moonshine_asr",
            Family::SanoTts => "sanotts",
            Family::SileroVad => "silero_vad",
        }
    }

    /// The family's selectable components.
    pub const fn components(self) -> &'static [&'static str] {
        match self {
            Family::OpenWakeWord => &["embedding"],
            Family::MoonshineAsr => &["encoder", "decoder"],
            Family::SanoTts => &["decoder"],
            Family::SileroVad => &["network"],
        }
    }

    /// The family named `name`, if any.
    pub fn from_name(name: &str) -> Option<Family> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// An implementation name in an exec plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Impl {
    /// The model's default ([`BackendKind::best`]).
    Default,
    /// The portable kernels (plain Rust; the reference path).
    Portable,
    /// The NEON kernels (aarch64, feature `neon`).
    Neon,
    /// The x86-64 kernels at the CPU's best level (AVX2 + FMA, or AVX-512F).
    X86,
}

impl Impl {
    /// The names, in the order errors list them.
    pub const NAMES: [&'static str; 4] = ["default", "portable", "neon", "x86"];

    /// The impl named `name`, if any.
    pub fn from_name(name: &str) -> Option<Impl> {
        match name {
            "default" => Some(Impl::Default),
            "portable" => Some(Impl::Portable),
            "neon" => Some(Impl::Neon),
            "x86" => Some(Impl::X86),
            _ => None,
        }
    }

    /// The impl's name.
    pub const fn name(self) -> &'static str {
        match self {
            Impl::Default => "default",
            Impl::Portable => "portable",
            Impl::Neon => "neon",
            Impl::X86 => "x86",
        }
    }

    /// The backend this impl runs on here.
    ///
    /// # Errors
    /// What is missing (the build option, the CPU architecture or feature) when the impl
    /// cannot run on this machine.
    pub fn resolve(self) -> Result<BackendKind, &'static str> {
        match self {
            Impl::Default => Ok(BackendKind::best()),
            Impl::Portable => Ok(BackendKind::Portable),
            Impl::Neon => {
                BackendKind::Neon.availability().map(|()| BackendKind::Neon).map_err(|u| u.reason)
            }
            Impl::X86 => match X86Level::best() {
                Some(level) => Ok(BackendKind::X86(level)),
                None => Err(BackendKind::X86(X86Level::Avx2)
                    .availability()
                    .err()
                    .map_or("this CPU lacks AVX2 and FMA", |u| u.reason)),
            },
        }
    }
}

/// A parsed `<family>.exec_plan`: one backend per component, resolved for this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImplChoices {
    family: Family,
    /// Per component of the family, in [`Family::components`] order: the impl asked for
    /// and the backend it resolved to.
    choices: Vec<(Impl, BackendKind)>,
}

impl ImplChoices {
    /// The default for every component of `family`.
    pub fn default_for(family: Family) -> ImplChoices {
        let choice = (Impl::Default, BackendKind::best());
        ImplChoices { family, choices: family.components().iter().map(|_| choice).collect() }
    }

    /// The family.
    pub fn family(&self) -> Family {
        self.family
    }

    /// The backend of `component`, `None` when the family has no such component.
    pub fn backend(&self, component: &str) -> Option<BackendKind> {
        self.index(component).map(|i| self.choices[i].1)
    }

    /// The impl asked for `component` (`Impl::Default` when not named).
    pub fn impl_of(&self, component: &str) -> Option<Impl> {
        self.index(component).map(|i| self.choices[i].0)
    }

    fn index(&self, component: &str) -> Option<usize> {
        self.family.components().iter().position(|&c| c == component)
    }
}

/// Why an exec plan was refused: the family's key and the first problem found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImplChoicesError {
    /// The family.
    pub family: Family,
    /// What is wrong, in one line.
    pub message: String,
}

impl core::fmt::Display for ImplChoicesError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}.exec_plan: {}", self.family.name(), self.message)
    }
}

impl core::error::Error for ImplChoicesError {}

/// `a, b, c` for an error message.
fn list(names: &[&str]) -> String {
    names.join(", ")
}

/// A JSON value's kind, for error messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses the JSON value of `<family>.exec_plan` (rules in the module docs) and resolves
/// each component's backend for this machine.
///
/// # Errors
/// [`ImplChoicesError`] naming the first problem: malformed JSON (with line and column), an
/// unknown component, key or impl (listing the valid names), a `backend` other than
/// [`SESSION_BACKEND`], `artifacts` or `parameters`, or an impl this machine or build
/// cannot run (naming what is missing).
pub fn parse_impl_choices(family: Family, json: &str) -> Result<ImplChoices, ImplChoicesError> {
    let fail = |message: String| ImplChoicesError { family, message };
    // serde_json's message ends with the position: "... at line L column C".
    let malformed = |e: serde_json::Error| fail(format!("malformed JSON: {e}"));
    let mut de = serde_json::Deserializer::from_str(json);
    serde::de::IgnoredAny::deserialize(&mut de).map_err(malformed)?;
    de.end().map_err(malformed)?;
    let mut de = serde_json::Deserializer::from_str(json);
    UniqueKeys::deserialize(&mut de).map_err(|e| fail(e.to_string()))?;
    let value: Value = serde_json::from_str(json).map_err(malformed)?;
    let mut plan = ImplChoices::default_for(family);
    let components = match &value {
        Value::String(s) if s == "default" => return Ok(plan),
        Value::Object(map) => map,
        Value::String(s) => {
            return Err(fail(format!(
                "expected an object of components ({}) or the string \"default\", got the \
                 string {s:?}",
                list(family.components())
            )))
        }
        other => {
            return Err(fail(format!(
                "expected an object of components ({}) or the string \"default\", got {}",
                list(family.components()),
                kind(other)
            )))
        }
    };
    for (name, spec) in components {
        if name == "artifacts" || name == "parameters" {
            return Err(fail(format!(
                "{name:?} is not supported (neon compiles its plans ahead of time); give \
                 components ({}) with keys impl, backend",
                list(family.components())
            )));
        }
        let Some(index) = plan.index(name) else {
            return Err(fail(format!(
                "unknown component {name:?} of {}; valid: {}",
                family.name(),
                list(family.components())
            )));
        };
        let choice = parse_component(name, spec).map_err(fail)?;
        let backend = choice
            .resolve()
            .map_err(|missing| fail(format!("{name}: impl \"{}\": {missing}", choice.name())))?;
        plan.choices[index] = (choice, backend);
    }
    Ok(plan)
}

/// The impl one component asks for: `"impl"` or `{"impl": .., "backend": ..}`.
fn parse_component(name: &str, spec: &Value) -> Result<Impl, String> {
    let impl_named = |v: &Value| match v {
        Value::String(s) => Impl::from_name(s)
            .ok_or_else(|| format!("{name}: unknown impl {s:?}; valid: {}", list(&Impl::NAMES))),
        other => Err(format!(
            "{name}: impl must be a string ({}), got {}",
            list(&Impl::NAMES),
            kind(other)
        )),
    };
    let map = match spec {
        Value::String(_) => return impl_named(spec),
        Value::Object(map) => map,
        other => {
            return Err(format!(
                "{name}: expected an object {{\"impl\": ...}} or an impl name, got {}",
                kind(other)
            ))
        }
    };
    let mut choice = Impl::Default;
    for (key, v) in map {
        match key.as_str() {
            "impl" => choice = impl_named(v)?,
            "backend" => match v {
                Value::String(s) if s == SESSION_BACKEND => {}
                Value::String(s) => {
                    return Err(format!(
                        "{name}: backend {s:?} does not match the session's \
                         (\"{SESSION_BACKEND}\")"
                    ))
                }
                other => {
                    return Err(format!(
                        "{name}: backend must be the string \"{SESSION_BACKEND}\", got {}",
                        kind(other)
                    ))
                }
            },
            "artifacts" | "parameters" => {
                return Err(format!(
                    "{name}: \"{key}\" is not supported (neon compiles its plans ahead of \
                     time); valid keys: impl, backend"
                ))
            }
            other => {
                return Err(format!("{name}: unknown key {other:?}; valid keys: impl, backend"))
            }
        }
    }
    Ok(choice)
}

impl core::fmt::Display for ImplChoices {
    /// The plan as JSON with the impl every component resolved to here, e.g.
    /// `{"encoder":"x86","decoder":"portable"}`: valid input for [`parse_impl_choices`], giving
    /// the same plan on this machine.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let parts: Vec<String> = self
            .family
            .components()
            .iter()
            .zip(&self.choices)
            .map(|(c, (_, b))| format!("\"{c}\":\"{}\"", b.impl_name()))
            .collect();
        write!(f, "{{{}}}", parts.join(","))
    }
}

/// The error for a key that is not a known session option (kept here so that
/// [`crate::session`] and this module name families the same way).
pub(crate) fn unknown_family(family: &str) -> String {
    let names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
    format!("unknown model family {family:?}; valid: {}", list(&names))
}

/// Walks a JSON value and fails on an object with the same key twice (serde_json keeps the
/// last one silently, which would let `{"decoder":"bogus","decoder":"portable"}` pass).
struct UniqueKeys;

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueKeys)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UniqueKeys, A::Error> {
        let mut seen: Vec<String> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                return Err(de::Error::custom(format!("the key {key:?} appears twice")));
            }
            map.next_value::<UniqueKeys>()?;
            seen.push(key);
        }
        Ok(UniqueKeys)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKeys, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(UniqueKeys)
    }

    fn visit_bool<E>(self, _: bool) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
}

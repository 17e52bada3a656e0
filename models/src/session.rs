//! Session options: `KEY=VALUE` settings a model is constructed with (feature `std`).
//!
//! | key | values | default |
//! |---|---|---|
//! | `openwakeword.exec_plan` | JSON ([`crate::exec_plan`]), component `embedding` | `default` |
//! | `openwakeword.embedding_mode` | `incremental`, `full` ([`EmbeddingMode`]) | `incremental` |
//! | `moonshine_asr.exec_plan` | JSON, components `encoder`, `decoder` | `default` |
//! | `moonshine_asr.int8` | `auto`, `widening`, `dot`, `mmla` ([`QuantPath`]: how the decoder's int8 GEMVs run, `mmla` as `dot`; `auto`: [`auto_int8`]) | `auto` |
//! | `moonshine_asr.encoder_int8` | `auto`, `widening`, `dot`, `mmla` ([`QuantPath`]: how the encoder's int8 GEMMs run, `mmla`: `smmla` on i8mm cores, the bits of `dot`; `auto`: [`auto_int8`]) | `widening` |
//! | `sanotts.exec_plan` | JSON, component `decoder` | `default` |
//! | `silero_vad.exec_plan` | JSON, component `network` | `default` |
//!
//! Every value is validated when it is set: an unknown key, family or value is an error
//! naming the valid ones, so a typo never silently keeps a default. Setting a key again
//! replaces its value.
//!
//! ```
//! use neon_models::session::SessionOptions;
//! use neon_models::exec_plan::Family;
//! use neon_runtime::BackendKind;
//!
//! let options = SessionOptions::from_pairs([
//!     r#"moonshine_asr.exec_plan={"decoder":{"impl":"portable"}}"#,
//!     "moonshine_asr.int8=dot",
//! ])?;
//! assert_eq!(options.backend(Family::MoonshineAsr, "decoder"), BackendKind::Portable);
//! assert_eq!(options.backend(Family::MoonshineAsr, "encoder"), BackendKind::best());
//! assert!(SessionOptions::from_pairs(["moonshine_asr.int9=dot"]).is_err());
//! # Ok::<(), neon_models::Error>(())
//! ```

use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

use neon_runtime::ops::quant::QuantPath;
use neon_runtime::BackendKind;

use crate::error::Error;
use crate::exec_plan::{parse_impl_choices, unknown_family, Family, ImplChoices};
use crate::openwakeword::detector::EmbeddingMode;

/// Every key, in the order errors list them.
pub const KEYS: [&str; 7] = [
    "openwakeword.exec_plan",
    "openwakeword.embedding_mode",
    "moonshine_asr.exec_plan",
    "moonshine_asr.int8",
    "moonshine_asr.encoder_int8",
    "sanotts.exec_plan",
    "silero_vad.exec_plan",
];

/// Validated session options (module docs): one exec plan per family and the models'
/// other choices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionOptions {
    impl_choices: [ImplChoices; Family::ALL.len()],
    embedding_mode: EmbeddingMode,
    /// `None`: `auto` ([`auto_int8`]).
    int8: Option<QuantPath>,
    /// `None`: `auto` ([`auto_int8`]).
    encoder_int8: Option<QuantPath>,
}

/// The path `auto` picks for the int8 products of a Moonshine component on `backend`:
/// [`QuantPath::Dot`] on [`BackendKind::Neon`], whatever the core, and [`QuantPath::Mmla`]
/// there where [`cpu::aarch64_i8mm`](neon_runtime::kernels::cpu::aarch64_i8mm) says the core
/// also has the int8 matrix-multiply extension (the same bits; its `smmla` GEMM: 0.91x the
/// `sdot` path's instructions for the 2 s encode on qemu's `max`, BENCHMARKS.md, "Moonshine
/// encoder on the int8-activation path"); [`QuantPath::Widening`] elsewhere (the portable and
/// x86 backends evaluate the dot path in portable code, slower than their widening kernels).
///
/// On NEON the dot path is `sdot` where the core has the dot-product extension and plain
/// ARMv8.0 NEON (`smull`, `smlal`, `sadalp`) elsewhere, with the same bits (exact integer
/// block sums, then the same f32 operations: `neon-runtime/src/kernels/quant/dot_widen.rs`
/// tests it), so the tokens do not depend on the core: on the ASR corpus both paths give
/// ONNX Runtime's tokens on all 14 clips, the same WER (3.20%), and the decoder step takes
/// 0.21x the widening path's instructions on Neoverse N1 and 0.38x on Cortex-A53, which has
/// no dotprod (BENCHMARKS.md, "Moonshine decoder: the dot path"). `moonshine_asr.int8`
/// defaults to `auto`; `moonshine_asr.encoder_int8` to `widening` (its error, 2-4% of the
/// encoder output, is ten times the decoder's: BENCHMARKS.md, "Moonshine encoder on the
/// int8-activation path").
pub fn auto_int8(backend: BackendKind) -> QuantPath {
    use neon_runtime::kernels::cpu;
    if backend == BackendKind::Neon {
        if cpu::aarch64_dotprod() && cpu::aarch64_i8mm() {
            QuantPath::Mmla
        } else {
            QuantPath::Dot
        }
    } else {
        QuantPath::Widening
    }
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self::new()
    }
}

fn option_error(key: &str, message: String) -> Error {
    Error::SessionOption { key: key.to_string(), message }
}

impl SessionOptions {
    /// Every option at its default.
    pub fn new() -> Self {
        Self {
            impl_choices: Family::ALL.map(ImplChoices::default_for),
            embedding_mode: EmbeddingMode::default(),
            int8: None,
            encoder_int8: Some(QuantPath::Widening),
        }
    }

    /// Options from `KEY=VALUE` pairs, applied in order (a later pair replaces an earlier
    /// one of the same key).
    ///
    /// # Errors
    /// As [`SessionOptions::set_pair`], for the first bad pair.
    pub fn from_pairs<I, S>(pairs: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut options = Self::new();
        for pair in pairs {
            options.set_pair(pair.as_ref())?;
        }
        Ok(options)
    }

    /// Sets one `KEY=VALUE` pair (split at the first `=`; the value may contain more).
    ///
    /// # Errors
    /// [`Error::SessionOption`] when there is no `=`, and as [`SessionOptions::set`].
    pub fn set_pair(&mut self, pair: &str) -> Result<(), Error> {
        match pair.split_once('=') {
            Some((key, value)) => self.set(key, value),
            None => Err(option_error(pair, "expected KEY=VALUE".to_string())),
        }
    }

    /// The key of a `KEY=VALUE` pair as [`SessionOptions::set`] reads it (ASCII whitespace
    /// around it ignored); `None` without `=`.
    pub fn pair_key(pair: &str) -> Option<&str> {
        pair.split_once('=').map(|(key, _)| trim(key))
    }

    /// Sets `key` to `value` (ASCII whitespace around either is ignored).
    ///
    /// # Errors
    /// [`Error::SessionOption`] naming the key: an unknown key or family (listing the valid
    /// ones), a value not in the key's list, or an exec plan [`parse_impl_choices`] refuses.
    /// The options are unchanged on error.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), Error> {
        let (key, value) = (trim(key), trim(value));
        let (family, name) = key.split_once('.').unwrap_or((key, ""));
        if name == "exec_plan" {
            let Some(family) = Family::from_name(family) else {
                return Err(option_error(key, unknown_family(family)));
            };
            let plan =
                parse_impl_choices(family, value).map_err(|e| option_error(key, e.message))?;
            self.impl_choices[family_index(family)] = plan;
            return Ok(());
        }
        match key {
            "openwakeword.embedding_mode" => {
                self.embedding_mode = match value {
                    "incremental" => EmbeddingMode::Incremental,
                    "full" => EmbeddingMode::Full,
                    _ => return Err(bad_value(key, value, &["incremental", "full"])),
                }
            }
            "moonshine_asr.int8" => self.int8 = quant_path(key, value)?,
            "moonshine_asr.encoder_int8" => self.encoder_int8 = quant_path(key, value)?,
            _ => {
                return Err(option_error(
                    key,
                    format!("unknown session option; valid: {}", KEYS.join(", ")),
                ))
            }
        }
        Ok(())
    }

    /// The exec plan of `family`.
    pub fn impl_choices(&self, family: Family) -> &ImplChoices {
        &self.impl_choices[family_index(family)]
    }

    /// The backend `component` of `family` runs on.
    ///
    /// # Panics
    /// When `family` has no component `component` (a name from [`Family::components`] is
    /// expected: a typo in the calling code, not bad input).
    pub fn backend(&self, family: Family, component: &str) -> BackendKind {
        match self.impl_choices(family).backend(component) {
            Some(b) => b,
            None => panic!(
                "{} has no component {component:?} (components: {})",
                family.name(),
                family.components().join(", ")
            ),
        }
    }

    /// `openwakeword.embedding_mode`.
    pub fn embedding_mode(&self) -> EmbeddingMode {
        self.embedding_mode
    }

    /// `moonshine_asr.int8`, `auto` resolved for the decoder's backend on this CPU
    /// ([`auto_int8`]).
    pub fn int8(&self) -> QuantPath {
        self.int8.unwrap_or_else(|| auto_int8(self.backend(Family::MoonshineAsr, "decoder")))
    }

    /// `moonshine_asr.encoder_int8`, `auto` resolved for the encoder's backend on this CPU
    /// ([`auto_int8`]).
    pub fn encoder_int8(&self) -> QuantPath {
        self.encoder_int8
            .unwrap_or_else(|| auto_int8(self.backend(Family::MoonshineAsr, "encoder")))
    }

    /// Every option and its current value, one `KEY=VALUE` per entry, exec plans with the
    /// impl each component resolved to on this machine (`{"encoder":"x86",...}`): valid
    /// input for [`SessionOptions::from_pairs`], which gives the same backends and values.
    pub fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = Family::ALL
            .iter()
            .map(|&f| format!("{}.exec_plan={}", f.name(), self.impl_choices(f)))
            .collect();
        let mode = match self.embedding_mode {
            EmbeddingMode::Incremental => "incremental",
            EmbeddingMode::Full => "full",
        };
        out.push(format!("openwakeword.embedding_mode={mode}"));
        out.push(format!("moonshine_asr.int8={}", quant_path_name(self.int8)));
        out.push(format!("moonshine_asr.encoder_int8={}", quant_path_name(self.encoder_int8)));
        out
    }
}

fn family_index(family: Family) -> usize {
    Family::ALL.iter().position(|&f| f == family).unwrap_or(0)
}

/// A [`QuantPath`] option's value.
fn quant_path(key: &str, value: &str) -> Result<Option<QuantPath>, Error> {
    match value {
        "auto" => Ok(None),
        "widening" => Ok(Some(QuantPath::Widening)),
        "dot" => Ok(Some(QuantPath::Dot)),
        "mmla" => Ok(Some(QuantPath::Mmla)),
        _ => Err(bad_value(key, value, &["auto", "widening", "dot", "mmla"])),
    }
}

/// The value of `moonshine_asr.int8` / `moonshine_asr.encoder_int8` naming `path` (`None`:
/// `auto`).
pub fn quant_path_name(path: Option<QuantPath>) -> &'static str {
    match path {
        None => "auto",
        Some(QuantPath::Widening) => "widening",
        Some(QuantPath::Dot) => "dot",
        Some(QuantPath::Mmla) => "mmla",
    }
}

fn bad_value(key: &str, value: &str, valid: &[&str]) -> Error {
    option_error(key, format!("unknown value {value:?}; valid: {}", valid.join(", ")))
}

/// `s` without ASCII whitespace around it.
fn trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_ascii_whitespace())
}

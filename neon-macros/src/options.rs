//! The option reader of one call (`stride = 2`, `padding = (1, 1)`, `causal`): options are
//! checked off as the operator table reads them, so the ones nobody read can be reported
//! ([`Options::finish`]). Every malformed value is reported into the shared [`Ctxt`] and
//! replaced by the default, so the other options of the call are still checked.
//!
//! The options and defaults are the operator table's
//! ([`OpSpec::options`](crate::signatures::OpSpec)): in debug builds (the UI and plan
//! tests, which run every resolver path) reading an option the operator's row does not
//! list, or using a default other than the row's, is a panic, so the documentation
//! rendered from the table cannot drift from what the resolvers read.

use neon_runtime::Layout;
use syn::{Expr, Ident, Lit};

use crate::ctxt::Ctxt;
use crate::literals::{lit_float, lit_int, path_ident};
use crate::signatures::{DefaultValue, OpSpec};
use crate::suggest;

/// The options of one call.
pub struct Options<'a> {
    items: &'a [(Ident, Expr)],
    used: Vec<bool>,
    /// The operator's row of the table: the options it may read, with their defaults.
    spec: &'static OpSpec,
    cx: &'a Ctxt,
}

fn as_usize(e: &Expr) -> Option<usize> {
    lit_int(e).and_then(|v| usize::try_from(v).ok())
}

impl<'a> Options<'a> {
    /// The options `items` of a call of the operator `spec`.
    pub fn new(items: &'a [(Ident, Expr)], spec: &'static OpSpec, cx: &'a Ctxt) -> Self {
        Options { items, used: vec![false; items.len()], spec, cx }
    }

    /// The operator's row of the table.
    pub fn spec(&self) -> &'static OpSpec {
        self.spec
    }

    /// Rule (debug builds): the operator reads only the options of its row; returns the
    /// row's default of `key`.
    fn ask(&self, key: &str) -> Option<DefaultValue> {
        let default = self.spec.option(key).map(|o| o.default);
        debug_assert!(
            default.is_some(),
            "{} reads option `{key}`, which the operator table does not list",
            self.spec.name
        );
        default
    }

    /// Rule (debug builds): a resolver's default of `key` is the table's, or (an integer
    /// only) one the table describes in words ([`DefaultValue::Text`], e.g. a pool's
    /// stride: the kernel).
    fn check_default(&self, key: &str, default: DefaultValue) {
        let documented = self.ask(key);
        debug_assert!(
            documented.is_none()
                || documented == Some(default)
                || matches!(
                    (documented, default),
                    (Some(DefaultValue::Text(_)), DefaultValue::Int(_))
                ),
            "{}: the default of `{key}` is {default:?}, the operator table says {documented:?}",
            self.spec.name
        );
    }

    /// Whether the call gives `key` (without reading it).
    pub fn has(&mut self, key: &str) -> bool {
        self.ask(key);
        self.items.iter().any(|(k, _)| k == key)
    }

    /// The value of `key` without reading it (for the span of a rule on several options).
    pub fn peek(&self, key: &str) -> Option<&'a Expr> {
        self.ask(key);
        self.items.iter().find(|(k, _)| k == key).map(|(_, e)| e)
    }

    fn get(&mut self, key: &str) -> Option<&'a Expr> {
        self.ask(key);
        let i = self.items.iter().position(|(k, _)| k == key)?;
        self.used[i] = true;
        Some(&self.items[i].1)
    }

    /// An integer >= 0 (`default` when absent or malformed).
    pub fn usize(&mut self, key: &str, default: usize) -> usize {
        self.check_default(key, DefaultValue::Int(default));
        self.read_usize(key, default)
    }

    /// [`Options::usize`] without the default's check (for a required option).
    fn read_usize(&mut self, key: &str, default: usize) -> usize {
        match self.get(key) {
            None => default,
            Some(e) => as_usize(e).unwrap_or_else(|| {
                self.cx.error_spanned_by(e, format!("`{key}` takes an integer >= 0"));
                default
            }),
        }
    }

    /// A number (`default` when absent or malformed).
    pub fn float(&mut self, key: &str, default: f32) -> f32 {
        self.check_default(key, DefaultValue::Float(default));
        self.read_float(key, default)
    }

    /// [`Options::float`] without the default's check (for a required option).
    fn read_float(&mut self, key: &str, default: f32) -> f32 {
        match self.get(key) {
            None => default,
            Some(e) => match lit_float(e) {
                Some(v) => v as f32,
                None => {
                    self.cx.error_spanned_by(e, format!("`{key}` takes a number"));
                    default
                }
            },
        }
    }

    /// `n` (both `n`) or `(left, right)`; `None` when absent or malformed.
    pub fn pair(&mut self, key: &str) -> Option<(usize, usize)> {
        let e = self.get(key)?;
        if let Expr::Tuple(t) = e {
            let v: Vec<Option<usize>> = t.elems.iter().map(as_usize).collect();
            if let [Some(a), Some(b)] = v[..] {
                return Some((a, b));
            }
        }
        if let Some(v) = as_usize(e) {
            return Some((v, v));
        }
        self.cx.error_spanned_by(e, format!("`{key}` takes `n` or `(left, right)`"));
        None
    }

    /// `n` (every element `n`) or a tuple of `len` integers (`form` describes both);
    /// `None` when absent or malformed.
    pub fn tuple(&mut self, key: &str, len: usize, form: &str) -> Option<Vec<usize>> {
        let e = self.get(key)?;
        if let Some(v) = as_usize(e) {
            return Some(vec![v; len]);
        }
        if let Expr::Tuple(t) = e {
            let v: Option<Vec<usize>> = t.elems.iter().map(as_usize).collect();
            if let Some(v) = v.filter(|v| v.len() == len) {
                return Some(v);
            }
        }
        self.cx.error_spanned_by(e, format!("`{key}` takes {form}"));
        None
    }

    /// A number when the call gives one (0 when malformed, reported); `None` when absent
    /// (the table's default is then [`DefaultValue::Text`]: what the operator does
    /// without it).
    pub fn given_float(&mut self, key: &str) -> Option<f32> {
        debug_assert!(
            matches!(self.ask(key), None | Some(DefaultValue::Text(_))),
            "{}: `{key}` is read without a default, the operator table says {:?}",
            self.spec.name,
            self.ask(key)
        );
        // A malformed value is reported and reads 0: the call is given the option (no
        // second error for a missing one) and fails on the reported error.
        self.has(key).then(|| self.read_float(key, 0.0))
    }

    /// An integer the call must give; `None` (reported) when absent or malformed.
    pub fn required_usize(&mut self, key: &str, callee: &Ident) -> Option<usize> {
        self.check_default(key, DefaultValue::Required);
        if self.has(key) {
            let before = self.cx.error_count();
            let v = self.read_usize(key, 0);
            (self.cx.error_count() == before).then_some(v)
        } else {
            self.missing(key, callee, "<integer>");
            None
        }
    }

    /// A number the call must give; `None` (reported) when absent.
    pub fn required_float(&mut self, key: &str, callee: &Ident) -> Option<f32> {
        self.check_default(key, DefaultValue::Required);
        if self.has(key) {
            Some(self.read_float(key, 0.0))
        } else {
            self.missing(key, callee, "<number>");
            None
        }
    }

    /// Reports a required option that is absent: at the given option that misspells it
    /// (`kernel_size` for `kernel`; one error for one mistake, that option then counts as
    /// read), else at the operator.
    fn missing(&mut self, key: &str, callee: &Ident, form: &str) {
        let misspelt = self.items.iter().position(|(k, _)| {
            let k = k.to_string();
            self.spec.option(&k).is_none() && suggest::closest(&k, &[key]).is_some()
        });
        match misspelt {
            Some(i) => {
                self.used[i] = true;
                let k = &self.items[i].0;
                let msg = format!(
                    "{callee} has no option `{k}`: did you mean `{key}`? (`{key}` is required)"
                );
                self.cx.error(k.span(), msg);
            }
            None => self.cx.error(callee.span(), format!("{callee} needs `{key} = {form}`")),
        }
    }

    /// The value of `key` when it is a bare name (`padding = same`), without consuming it
    /// otherwise.
    pub fn keyword(&mut self, key: &str) -> Option<(String, &'a Expr)> {
        self.ask(key);
        let i = self.items.iter().position(|(k, _)| k == key)?;
        let e = &self.items[i].1;
        let name = path_ident(e)?;
        self.used[i] = true;
        Some((name, e))
    }

    /// `true` / `false` (a bare flag reads `true`); `false` when absent or malformed.
    pub fn flag(&mut self, key: &str) -> bool {
        // Rule (debug builds): a flag absent reads `false`, so its row says `false`, or the
        // resolver reads it only when given (`count_include_pad`, default `true`).
        let given = self.items.iter().any(|(k, _)| k == key);
        debug_assert!(
            matches!(self.ask(key), None | Some(DefaultValue::Flag(false)))
                || (given && matches!(self.ask(key), Some(DefaultValue::Flag(true)))),
            "{}: `{key}` is read as a flag defaulting to `false`, the operator table says {:?}",
            self.spec.name,
            self.ask(key)
        );
        match self.get(key) {
            None => false,
            Some(Expr::Lit(l)) if matches!(&l.lit, Lit::Bool(b) if b.value) => true,
            Some(Expr::Lit(l)) if matches!(&l.lit, Lit::Bool(_)) => false,
            Some(e) => {
                self.cx.error_spanned_by(e, format!("`{key}` takes `true` or `false`"));
                false
            }
        }
    }

    /// `channel_first` or `frame_major` (`default` when absent or malformed).
    pub fn layout(&mut self, key: &str, default: Layout) -> Layout {
        self.check_default(key, DefaultValue::Layout(default));
        match self.get(key) {
            None => default,
            Some(e) => match path_ident(e).as_deref() {
                Some("channel_first") => Layout::ChannelFirst,
                Some("frame_major") => Layout::FrameMajor,
                other => {
                    let dym = other
                        .map(|v| suggest::did_you_mean(v, &["channel_first", "frame_major"]))
                        .unwrap_or_default();
                    let msg = format!("`{key}` takes `channel_first` or `frame_major`{dym}");
                    self.cx.error_spanned_by(e, msg);
                    default
                }
            },
        }
    }

    /// A scalar's name; `None` when absent or malformed.
    pub fn ident(&mut self, key: &str) -> Option<Ident> {
        let e = self.get(key)?;
        match e {
            Expr::Path(p) if p.path.get_ident().is_some() => p.path.get_ident().cloned(),
            _ => {
                self.cx.error_spanned_by(e, format!("`{key}` takes a scalar's name"));
                None
            }
        }
    }

    /// Constant dims `[d0, d1, ..]` (rank 1..=4, integers >= 1); `None` (reported) when
    /// absent or malformed.
    pub fn dims(&mut self, key: &str, callee: &Ident) -> Option<Vec<usize>> {
        let Some(e) = self.get(key) else {
            self.missing(key, callee, "[d0, d1, ..]");
            return None;
        };
        if let Expr::Array(a) = e {
            let v: Option<Vec<usize>> = a.elems.iter().map(as_usize).collect();
            // At most 2^40 elements, the limit of a declared tensor.
            let fits = |v: &Vec<usize>| {
                v.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).is_some_and(|n| n <= 1 << 40)
            };
            if let Some(v) = v.filter(|v| (1..=4).contains(&v.len()) && !v.contains(&0) && fits(v))
            {
                return Some(v);
            }
        }
        let msg = format!(
            "`{key}` takes constant dims `[d0, d1, ..]`: 1 to 4 integers >= 1, at most 2^40 \
             elements in all"
        );
        self.cx.error_spanned_by(e, msg);
        None
    }

    /// Reports `key`, if given, with `msg` at its name (an option of another form of the
    /// operator), and marks it read.
    pub fn reject(&mut self, key: &str, msg: String) {
        if let Some(i) = self.items.iter().position(|(k, _)| k == key) {
            self.used[i] = true;
            self.cx.error(self.items[i].0.span(), msg);
        }
    }

    /// Reports every option the operator did not read, with the closest of its options
    /// (the table's) and the list of them, and every option given twice. When the operator
    /// did not resolve (`resolved` false: it may have stopped before reading all of its
    /// options), only the options its row does not have.
    pub fn finish(self, resolved: bool) {
        let op = self.spec.name;
        let known: Vec<&str> = self.spec.options.iter().map(|o| o.name).collect();
        for (i, (k, _)) in self.items.iter().enumerate() {
            if self.items[..i].iter().any(|(first, _)| first == k) {
                self.cx.error(k.span(), format!("{op}: option `{k}` is given twice"));
            } else if !self.used[i] && (resolved || self.spec.option(&k.to_string()).is_none()) {
                let hint = suggest::hint(&k.to_string(), &known, "options");
                self.cx.error(k.span(), format!("{op} has no option `{k}`{hint}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `read` from an empty option list of operator `op` (debug builds panic on a
    /// read the table does not document).
    fn read(op: &str, read: impl FnOnce(&mut Options)) {
        let cx = Ctxt::new();
        let spec = crate::signatures::lookup(op).expect("a builtin operator");
        read(&mut Options::new(&[], spec, &cx));
        assert!(cx.check().is_ok());
    }

    #[test]
    fn documented_reads_pass() {
        read("conv1d", |o| {
            assert_eq!(o.usize("stride", 1), 1);
            assert_eq!(o.layout("output", Layout::ChannelFirst), Layout::ChannelFirst);
            assert!(!o.flag("causal"));
        });
        read("avg_pool1d", |o| assert_eq!(o.usize("stride", 3), 3));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "the operator table says")]
    fn an_undocumented_default_panics() {
        read("conv1d", |o| {
            o.usize("stride", 2);
        });
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "does not list")]
    fn an_undocumented_option_panics() {
        read("relu", |o| {
            o.float("slope", 0.01);
        });
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "the operator table says")]
    fn a_flag_defaulting_to_true_is_read_only_when_given() {
        read("avg_pool1d", |o| {
            o.flag("count_include_pad");
        });
    }
}

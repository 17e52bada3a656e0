//! Every rule of `<family>.exec_plan` and of the other session options
//! (`neon_models::exec_plan`, `neon_models::session`).

use neon_models::exec_plan::{parse_impl_choices, Family, Impl};
use neon_models::openwakeword::detector::EmbeddingMode;
use neon_models::session::{auto_int8, SessionOptions};
use neon_runtime::kernels::cpu::{self, X86Level};
use neon_runtime::ops::quant::QuantPath;
use neon_runtime::BackendKind;

/// The message of a refused exec plan.
fn refused(family: Family, json: &str) -> String {
    match parse_impl_choices(family, json) {
        Ok(plan) => panic!("{json} was accepted as {plan:?}"),
        Err(e) => e.to_string(),
    }
}

fn backend(family: Family, json: &str, component: &str) -> BackendKind {
    let plan = parse_impl_choices(family, json).unwrap_or_else(|e| panic!("{json}: {e}"));
    plan.backend(component).expect("a component of the family")
}

#[test]
fn omission_empty_object_and_default_keep_the_default() {
    let best = BackendKind::best();
    for family in Family::ALL {
        for json in [
            "{}",
            "\"default\"",
            " { } ",
            &format!("{{\"{}\":\"default\"}}", family.components()[0]),
            &format!("{{\"{}\":{{\"impl\":\"default\"}}}}", family.components()[0]),
            &format!("{{\"{}\":{{}}}}", family.components()[0]),
            &format!("{{\"{}\":{{\"backend\":\"cpu\"}}}}", family.components()[0]),
        ] {
            for component in family.components() {
                assert_eq!(backend(family, json, component), best, "{json}");
            }
        }
        // Omission: a session without the key.
        for component in family.components() {
            assert_eq!(SessionOptions::new().backend(family, component), best);
        }
    }
}

#[test]
fn the_default_is_neon_on_aarch64_else_x86_else_portable() {
    let expected = if cfg!(all(target_arch = "aarch64", feature = "neon")) {
        BackendKind::Neon
    } else if let Some(level) = X86Level::best() {
        BackendKind::X86(level)
    } else {
        BackendKind::Portable
    };
    assert_eq!(BackendKind::best(), expected);
    assert_eq!(Impl::Default.resolve(), Ok(expected));
}

#[test]
fn portable_selects_one_component_and_leaves_the_others() {
    let json = r#"{"decoder":{"impl":"portable"}}"#;
    assert_eq!(backend(Family::MoonshineAsr, json, "decoder"), BackendKind::Portable);
    assert_eq!(backend(Family::MoonshineAsr, json, "encoder"), BackendKind::best());
    let plan = parse_impl_choices(Family::MoonshineAsr, json).unwrap();
    assert_eq!(plan.impl_of("decoder"), Some(Impl::Portable));
    assert_eq!(plan.impl_of("encoder"), Some(Impl::Default));
    assert_eq!(plan.backend("head"), None);
    // The shorthand: an impl name for the component.
    assert_eq!(backend(Family::OpenWakeWord, r#"{"embedding":"portable"}"#, "embedding"), {
        BackendKind::Portable
    });
    assert_eq!(backend(Family::SanoTts, r#"{"decoder":"portable"}"#, "decoder"), {
        BackendKind::Portable
    });
}

#[test]
fn neon_needs_an_aarch64_cpu_and_the_build_option() {
    let json = r#"{"encoder":{"impl":"neon"}}"#;
    if cfg!(all(target_arch = "aarch64", feature = "neon")) {
        assert_eq!(backend(Family::MoonshineAsr, json, "encoder"), BackendKind::Neon);
    } else if cfg!(target_arch = "aarch64") {
        let e = refused(Family::MoonshineAsr, json);
        assert!(e.contains("feature `neon`"), "{e}");
    } else {
        let e = refused(Family::MoonshineAsr, json);
        assert_eq!(e, "moonshine_asr.exec_plan: encoder: impl \"neon\": it needs an aarch64 CPU");
    }
}

#[test]
fn x86_needs_an_x86_64_cpu_with_avx2_and_fma() {
    let json = r#"{"embedding":{"impl":"x86","backend":"cpu"}}"#;
    match X86Level::best() {
        Some(level) => {
            assert_eq!(backend(Family::OpenWakeWord, json, "embedding"), BackendKind::X86(level))
        }
        None => {
            let e = refused(Family::OpenWakeWord, json);
            let missing =
                if cfg!(target_arch = "x86_64") { "AVX2 and FMA" } else { "an x86-64 CPU" };
            assert!(e.contains(missing), "{e}");
        }
    }
}

#[test]
fn a_backend_other_than_the_sessions_is_refused() {
    let e = refused(Family::MoonshineAsr, r#"{"decoder":{"impl":"portable","backend":"gpu"}}"#);
    assert_eq!(
        e,
        "moonshine_asr.exec_plan: decoder: backend \"gpu\" does not match the session's (\"cpu\")"
    );
    let e = refused(Family::MoonshineAsr, r#"{"decoder":{"backend":1}}"#);
    assert!(e.contains("backend must be the string \"cpu\", got a number"), "{e}");
}

#[test]
fn artifacts_and_parameters_are_refused() {
    for key in ["artifacts", "parameters"] {
        let json = format!(r#"{{"decoder":{{"impl":"portable","{key}":{{}}}}}}"#);
        let e = refused(Family::SanoTts, &json);
        assert!(e.contains(&format!("\"{key}\" is not supported")), "{e}");
        assert!(e.contains("valid keys: impl, backend"), "{e}");
    }
}

#[test]
fn unknown_components_impls_and_keys_list_the_valid_names() {
    assert_eq!(
        refused(Family::MoonshineAsr, r#"{"head":{"impl":"portable"}}"#),
        "moonshine_asr.exec_plan: unknown component \"head\" of moonshine_asr; valid: \
         encoder, decoder"
    );
    assert_eq!(
        refused(Family::OpenWakeWord, r#"{"decoder":"portable"}"#),
        "openwakeword.exec_plan: unknown component \"decoder\" of openwakeword; valid: embedding"
    );
    assert_eq!(
        refused(Family::SanoTts, r#"{"decoder":{"impl":"cuda"}}"#),
        "sanotts.exec_plan: decoder: unknown impl \"cuda\"; valid: default, portable, neon, x86"
    );
    assert_eq!(
        refused(Family::SanoTts, r#"{"decoder":"NEON"}"#),
        "sanotts.exec_plan: decoder: unknown impl \"NEON\"; valid: default, portable, neon, x86"
    );
    assert_eq!(
        refused(Family::SanoTts, r#"{"decoder":{"impl":"portable","threads":2}}"#),
        "sanotts.exec_plan: decoder: unknown key \"threads\"; valid keys: impl, backend"
    );
    let e = refused(Family::SanoTts, r#"{"decoder":{"impl":3}}"#);
    assert!(e.contains("impl must be a string"), "{e}");
}

#[test]
fn values_of_the_wrong_json_type_are_refused() {
    for (json, got) in [
        ("3", "a number"),
        ("[]", "an array"),
        ("null", "null"),
        ("\"portable\"", "the string \"portable\""),
    ] {
        let e = refused(Family::MoonshineAsr, json);
        assert!(e.contains(&format!("or the string \"default\", got {got}")), "{json}: {e}");
        assert!(e.contains("(encoder, decoder)"), "{e}");
    }
    let e = refused(Family::MoonshineAsr, r#"{"decoder":true}"#);
    assert!(e.contains("decoder: expected an object"), "{e}");
}

#[test]
fn malformed_json_is_reported_with_its_position() {
    let e = refused(Family::MoonshineAsr, "{\"decoder\":\n  {\"impl\" \"neon\"}}");
    assert_eq!(e, "moonshine_asr.exec_plan: malformed JSON: expected `:` at line 2 column 11");
    let e = refused(Family::MoonshineAsr, "");
    assert_eq!(
        e,
        "moonshine_asr.exec_plan: malformed JSON: EOF while parsing a value at line 1 column 0"
    );
    let e = refused(Family::MoonshineAsr, "{} {}");
    assert_eq!(
        e,
        "moonshine_asr.exec_plan: malformed JSON: trailing characters at line 1 column 4"
    );
}

#[test]
fn a_key_given_twice_is_refused_at_any_level() {
    for json in [
        r#"{"decoder":"bogus","decoder":"portable"}"#,
        r#"{"decoder":{"impl":"bogus","impl":"portable"}}"#,
        r#"{"decoder":"portable","decoder":"default"}"#,
    ] {
        let e = refused(Family::MoonshineAsr, json);
        assert!(e.contains("appears twice"), "{json}: {e}");
    }
    let e = refused(Family::MoonshineAsr, r#"{"decoder":"portable","decoder":"portable"}"#);
    assert!(e.starts_with("moonshine_asr.exec_plan: the key \"decoder\" appears twice"), "{e}");
}

#[test]
fn user_strings_are_quoted_with_escapes_in_one_line() {
    let e = refused(Family::OpenWakeWord, "{\"embedding\":\"port\\nable\"}");
    assert_eq!(
        e,
        "openwakeword.exec_plan: embedding: unknown impl \"port\\nable\"; valid: default, \
         portable, neon, x86"
    );
    assert_eq!(e.lines().count(), 1);
    let e = refused(Family::OpenWakeWord, "{\"a\\u0000b\":\"portable\"}");
    assert!(e.contains("unknown component \"a\\0b\""), "{e}");
    // `artifacts` at the top level gets its own message, not "unknown component".
    let e = refused(Family::OpenWakeWord, r#"{"artifacts":[]}"#);
    assert!(e.contains("\"artifacts\" is not supported"), "{e}");
}

#[test]
fn session_options_parse_key_value_pairs() {
    let options = SessionOptions::from_pairs([
        r#"moonshine_asr.exec_plan={"decoder":"portable"}"#,
        "moonshine_asr.int8=dot",
        "openwakeword.embedding_mode=full",
        r#"openwakeword.exec_plan={"embedding":{"impl":"portable"}}"#,
        "sanotts.exec_plan=\"default\"",
    ])
    .unwrap();
    assert_eq!(options.backend(Family::MoonshineAsr, "decoder"), BackendKind::Portable);
    assert_eq!(options.backend(Family::MoonshineAsr, "encoder"), BackendKind::best());
    assert_eq!(options.backend(Family::OpenWakeWord, "embedding"), BackendKind::Portable);
    assert_eq!(options.backend(Family::SanoTts, "decoder"), BackendKind::best());
    assert_eq!(options.int8(), QuantPath::Dot);
    assert_eq!(options.embedding_mode(), EmbeddingMode::Full);
    let described = options.describe();
    assert!(described.contains(&"moonshine_asr.int8=dot".to_string()), "{described:?}");
    let impl_name = BackendKind::best().impl_name();
    let want =
        format!("moonshine_asr.exec_plan={{\"encoder\":\"{impl_name}\",\"decoder\":\"portable\"}}");
    assert!(described.contains(&want), "{described:?}");
    // Defaults.
    let d = SessionOptions::new();
    let best = BackendKind::best();
    assert_eq!((d.int8(), d.embedding_mode()), (auto_int8(best), EmbeddingMode::Incremental));
    assert!(d.describe().contains(&"moonshine_asr.int8=auto".to_string()));
    // `auto`: the dot path exactly on NEON, whatever the core (`sdot` or `smull`/`sadalp`,
    // the same bits), its `smmla` GEMM where the core has dotprod and i8mm.
    let neon = if cpu::aarch64_dotprod() && cpu::aarch64_i8mm() {
        QuantPath::Mmla
    } else {
        QuantPath::Dot
    };
    let want = if best == BackendKind::Neon { neon } else { QuantPath::Widening };
    assert_eq!(auto_int8(best), want);
    assert_eq!(auto_int8(BackendKind::Neon), neon);
    assert_eq!(auto_int8(BackendKind::Portable), QuantPath::Widening);
    // A portable decoder stays on the widening path under `auto`.
    let o =
        SessionOptions::from_pairs([r#"moonshine_asr.exec_plan={"decoder":"portable"}"#]).unwrap();
    assert_eq!(o.int8(), QuantPath::Widening);
    let o =
        SessionOptions::from_pairs(["moonshine_asr.int8=dot", "moonshine_asr.int8=auto"]).unwrap();
    assert_eq!(o, d);
    // ASCII whitespace around the key and the value is ignored.
    let o = SessionOptions::from_pairs([" moonshine_asr.int8 =  dot\t"]).unwrap();
    assert_eq!(o.int8(), QuantPath::Dot);
    let mut o = SessionOptions::new();
    o.set(" openwakeword.embedding_mode", " full ").unwrap();
    assert_eq!(o.embedding_mode(), EmbeddingMode::Full);
    // `describe` is valid input: it gives the same backends and values back.
    let again = SessionOptions::from_pairs(options.describe()).unwrap();
    assert_eq!(again.describe(), options.describe());
    assert_eq!(again.backend(Family::MoonshineAsr, "decoder"), BackendKind::Portable);
    // A later pair replaces an earlier one; the value may hold `=`.
    let o = SessionOptions::from_pairs(["moonshine_asr.int8=dot", "moonshine_asr.int8=widening"])
        .unwrap();
    assert_eq!(o.int8(), QuantPath::Widening);
    // The encoder's int8 GEMMs have their own key, independent of the decoder's.
    let o = SessionOptions::from_pairs(["moonshine_asr.encoder_int8=dot"]).unwrap();
    assert_eq!((o.encoder_int8(), o.int8()), (QuantPath::Dot, auto_int8(best)));
    assert!(o.describe().contains(&"moonshine_asr.encoder_int8=dot".to_string()));
    // Its default is `widening` on every CPU; `auto` is the decoder's rule.
    assert_eq!(d.encoder_int8(), QuantPath::Widening);
    assert!(d.describe().contains(&"moonshine_asr.encoder_int8=widening".to_string()));
    let o = SessionOptions::from_pairs(["moonshine_asr.encoder_int8=auto"]).unwrap();
    assert_eq!(o.encoder_int8(), auto_int8(best));
    assert!(o.describe().contains(&"moonshine_asr.encoder_int8=auto".to_string()));
    assert!(SessionOptions::from_pairs(["moonshine_asr.encoder_int8=sdot"]).is_err());
    // `mmla`: the `smmla` GEMM where the CPU has i8mm (the bits of `dot`).
    let o = SessionOptions::from_pairs(["moonshine_asr.encoder_int8=mmla"]).unwrap();
    assert_eq!(o.encoder_int8(), QuantPath::Mmla);
    assert!(o.describe().contains(&"moonshine_asr.encoder_int8=mmla".to_string()));
}

#[test]
fn bad_session_options_are_errors_and_change_nothing() {
    let cases = [
        ("moonshine_asr.int9=dot", "session option `moonshine_asr.int9`: unknown session option; valid: openwakeword.exec_plan, openwakeword.embedding_mode, moonshine_asr.exec_plan, moonshine_asr.int8, moonshine_asr.encoder_int8, sanotts.exec_plan, silero_vad.exec_plan"),
        ("moonshine_asr.int8=fast", "session option `moonshine_asr.int8`: unknown value \"fast\"; valid: auto, widening, dot, mmla"),
        ("openwakeword.embedding_mode=half", "session option `openwakeword.embedding_mode`: unknown value \"half\"; valid: incremental, full"),
        ("whisper.exec_plan={}", "session option `whisper.exec_plan`: unknown model family \"whisper\"; valid: openwakeword, moonshine_asr, sanotts, silero_vad"),
        ("moonshine_asr.int8", "session option `moonshine_asr.int8`: expected KEY=VALUE"),
        ("moonshine_asr.exec_plan={\"decoder\":\"gpu\"}", "session option `moonshine_asr.exec_plan`: decoder: unknown impl \"gpu\"; valid: default, portable, neon, x86"),
    ];
    for (pair, message) in cases {
        let mut options = SessionOptions::new();
        options.set_pair("moonshine_asr.int8=dot").unwrap();
        let before = options.clone();
        let e = options.set_pair(pair).expect_err(pair);
        assert_eq!(e.to_string(), message);
        assert_eq!(options, before, "{pair} changed the options");
    }
}

#[test]
#[should_panic(
    expected = "moonshine_asr has no component \"decodr\" (components: encoder, decoder)"
)]
fn asking_for_a_component_the_family_lacks_is_a_programming_error() {
    SessionOptions::new().backend(Family::MoonshineAsr, "decodr");
}

#[test]
fn every_message_is_one_line_whatever_the_key() {
    for pair in ["a\nb=c", "moonshine_asr.int8\r\n", "x\u{0}.exec_plan={}", "\u{7}=1"] {
        let e = SessionOptions::new().set_pair(pair).unwrap_err().to_string();
        assert_eq!(e.lines().count(), 1, "{pair:?}: {e}");
    }
    let e = SessionOptions::new().set_pair("a\nb=c").unwrap_err().to_string();
    assert!(e.starts_with("session option `a\\nb`: unknown session option"), "{e}");
}

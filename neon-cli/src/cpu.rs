//! What `neon bench` reports about the CPU: its model name, the cores offered and the
//! features the kernels use.

/// The CPU as `neon bench` reports it.
pub struct Cpu {
    /// Model name from `/proc/cpuinfo` (x86: `model name`; ARM: the board's `Model` line
    /// or the core named from `CPU part`), else `"unknown"`.
    pub model: String,
    /// Cores the OS offers this process.
    pub cores: usize,
    /// Features the kernels use and this CPU has: `neon`, `dotprod`, `i8mm` (aarch64);
    /// `avx2`, `fma`, `avx512f` (x86-64).
    pub features: Vec<&'static str>,
}

/// Arm's core names for the `CPU part` numbers of `/proc/cpuinfo` (implementer 0x41) of the
/// cores in single-board computers (Technical Reference Manuals, MIDR_EL1.PartNum).
const ARM_PARTS: [(&str, &str); 12] = [
    ("0xd03", "Cortex-A53"),
    ("0xd04", "Cortex-A35"),
    ("0xd05", "Cortex-A55"),
    ("0xd07", "Cortex-A57"),
    ("0xd08", "Cortex-A72"),
    ("0xd09", "Cortex-A73"),
    ("0xd0a", "Cortex-A75"),
    ("0xd0b", "Cortex-A76"),
    ("0xd0c", "Neoverse-N1"),
    ("0xd0d", "Cortex-A77"),
    ("0xd41", "Cortex-A78"),
    ("0xd44", "Cortex-X1"),
];

/// The model name in `cpuinfo` (the text of `/proc/cpuinfo`).
fn model_name(cpuinfo: &str) -> Option<String> {
    let value = |key: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_string())
        })
    };
    if let Some(m) = value("model name") {
        return Some(m);
    }
    // ARM: every distinct core part (big.LITTLE boards have two), and the board.
    let mut parts: Vec<String> = Vec::new();
    for l in cpuinfo.lines() {
        if let Some((k, v)) = l.split_once(':') {
            if k.trim() == "CPU part" {
                let v = v.trim();
                let name = ARM_PARTS
                    .iter()
                    .find(|(p, _)| p.eq_ignore_ascii_case(v))
                    .map_or_else(|| format!("part {v}"), |(_, n)| n.to_string());
                if !parts.contains(&name) {
                    parts.push(name);
                }
            }
        }
    }
    let cores = (!parts.is_empty()).then(|| parts.join(" + "));
    match (value("Model"), cores) {
        (Some(board), Some(cores)) => Some(format!("{board}, {cores}")),
        (board, cores) => board.or(cores),
    }
}

/// This machine's CPU.
pub fn describe() -> Cpu {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let mut features = Vec::new();
    #[cfg(target_arch = "aarch64")]
    {
        features.push("neon");
        if neon_runtime::kernels::cpu::aarch64_dotprod() {
            features.push("dotprod");
        }
        if neon_runtime::kernels::cpu::aarch64_i8mm() {
            features.push("i8mm");
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            features.push("avx2");
        }
        if std::arch::is_x86_feature_detected!("fma") {
            features.push("fma");
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            features.push("avx512f");
        }
    }
    Cpu {
        model: model_name(&cpuinfo).unwrap_or_else(|| "unknown".to_string()),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        features,
    }
}

#[cfg(test)]
mod tests {
    use super::model_name;

    #[test]
    fn names_x86_and_arm_cpus() {
        let x86 = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t: fpu\n";
        assert_eq!(model_name(x86).as_deref(), Some("Intel(R) Xeon(R) Processor"));
        let pi4 = "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd08\n\n\
                   processor\t: 1\nCPU part\t: 0xd08\n\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n";
        assert_eq!(model_name(pi4).as_deref(), Some("Raspberry Pi 4 Model B Rev 1.4, Cortex-A72"));
        let rk3588 = "CPU part\t: 0xd05\nCPU part\t: 0xd05\nCPU part\t: 0xd0b\nCPU part\t: 0xd0b\n";
        assert_eq!(model_name(rk3588).as_deref(), Some("Cortex-A55 + Cortex-A76"));
        assert_eq!(model_name("CPU part\t: 0xabc\n").as_deref(), Some("part 0xabc"));
        assert_eq!(model_name(""), None);
    }
}

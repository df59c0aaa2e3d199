//! Data type strings as tvm-ffi spells them (`TVMFFIDataTypeFromString` / `ToString`): DLPack 1.x
//! codes (`bool` is code 6 with 8 bits, the `float8_*`, `float6_*` and `float4_*` kinds), short
//! aliases (`i8`, `u32`, `f16`, `bf16`, `fp8_e4m3fn`, `f8_e5m2`, ...), lanes `xN` and scalable
//! `xvscalexN`. TVM 0.18's own spelling (`bool` as `uint1`, its e4m3/e5m2 codes) stays in
//! `dtype.rs`, for the 0.18 API.

use crate::abi::dtype_code::{BFLOAT, FLOAT, INT, OPAQUE_HANDLE as HANDLE, UINT};
use crate::abi::DLDataType;
use crate::runtime::base::error::{Error, Result};

/// DLPack 1.x's `kDLBool` (the code TVM 0.18 used for its e4m3 floats).
const BOOL: u8 = 6;

/// The sub-byte and 8-bit float kinds: code, name after `floatN_`, bits.
const FLOAT_KINDS: [(u8, &str, u8); 11] = [
    (7, "e3m4", 8),
    (8, "e4m3", 8),
    (9, "e4m3b11fnuz", 8),
    (10, "e4m3fn", 8),
    (11, "e4m3fnuz", 8),
    (12, "e5m2", 8),
    (13, "e5m2fnuz", 8),
    (14, "e8m0fnu", 8),
    (15, "e2m3fn", 6),
    (16, "e3m2fn", 6),
    (17, "e2m1fn", 4),
];

/// The spelled-out form of an alias (`i8` -> `int8`, `fp8_e5m2` -> `float8_e5m2`, ...).
fn normalized(s: &str) -> String {
    let digit_after = |p: &str| s.strip_prefix(p).and_then(|r| r.chars().next()).is_some_and(|c| c.is_ascii_digit());
    for (alias, full) in [
        ("fp8_", "float8_"),
        ("fp6_", "float6_"),
        ("fp4_", "float4_"),
        ("f8_", "float8_"),
        ("f6_", "float6_"),
        ("f4_", "float4_"),
    ] {
        if let Some(rest) = s.strip_prefix(alias) {
            return format!("{full}{rest}");
        }
    }
    for (alias, full) in [("bf", "bfloat"), ("i", "int"), ("u", "uint"), ("f", "float")] {
        if digit_after(alias) {
            return format!("{full}{}", &s[alias.len()..]);
        }
    }
    s.to_string()
}

/// Lanes after the bits: nothing (1), `xN`, or `xvscalexN` (scalable: -N).
fn lanes(rest: &str, s: &str) -> Result<u16> {
    let bad = || Error::value(format!("unknown dtype `{s}`"));
    if rest.is_empty() {
        return Ok(1);
    }
    let (scalable, n) = match rest.strip_prefix("xvscalex") {
        Some(n) => (true, n),
        None => (false, rest.strip_prefix('x').ok_or_else(bad)?),
    };
    let n: i32 = n.parse().map_err(|_| bad())?;
    if n <= 0 || n > i16::MAX as i32 {
        return Err(bad());
    }
    Ok(if scalable { (-n) as i16 as u16 } else { n as u16 })
}

/// Parse a data type string of tvm-ffi's grammar.
pub fn parse(s: &str) -> Result<DLDataType> {
    let bad = || Error::value(format!("unknown dtype `{s}`"));
    if s.is_empty() || s == "void" {
        return Ok(DLDataType::new(HANDLE, 0, 0));
    }
    if s.starts_with("custom") {
        return Err(Error::unsupported(format!("custom dtype `{s}`: no custom types are registered")));
    }
    let s_norm = normalized(s);
    for width in ["float8_", "float6_", "float4_"] {
        if let Some(rest) = s_norm.strip_prefix(width) {
            // The longest matching kind name (e4m3fnuz before e4m3fn before e4m3).
            let kind = FLOAT_KINDS
                .iter()
                .filter(|(_, name, bits)| format!("float{bits}_") == width && rest.starts_with(name))
                .max_by_key(|(_, name, _)| name.len())
                .ok_or_else(|| Error::value(format!("unknown {} type `{s}`", &width[..width.len() - 1])))?;
            // Lanes may follow the kind after an underscore (`float4_e2m1fn_x2`).
            let tail = &rest[kind.1.len()..];
            let tail = tail.strip_prefix("_x").map_or(tail, |t| &tail[1..tail.len() - t.len() + 1]);
            return Ok(DLDataType::new(kind.0, kind.2, lanes(tail, s)?));
        }
    }
    let kinds: [(&str, u8, u8); 6] = [
        ("bfloat", BFLOAT, 16),
        ("handle", HANDLE, 64),
        ("float", FLOAT, 32),
        ("uint", UINT, 32),
        ("int", INT, 32),
        ("bool", BOOL, 8),
    ];
    let (rest, code, default_bits) =
        kinds.iter().find_map(|&(p, c, b)| s_norm.strip_prefix(p).map(|r| (r, c, b))).ok_or_else(bad)?;
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let bits = match &rest[..digits] {
        "" => default_bits,
        d => match d.parse::<u32>().map_err(|_| bad())? {
            0 => default_bits,
            b => u8::try_from(b)
                .map_err(|_| Error::value(format!("Bits value {b} is out of range for uint8_t in dtype '{s}'")))?,
        },
    };
    Ok(DLDataType::new(code, bits, lanes(&rest[digits..], s)?))
}

/// A data type as tvm-ffi writes it.
pub fn to_string(t: DLDataType) -> Result<String> {
    if t.code == BOOL && t.bits == 8 && t.lanes == 1 {
        return Ok("bool".into());
    }
    if t.code == HANDLE && t.bits == 0 && t.lanes == 0 {
        return Ok(String::new());
    }
    let mut out = match t.code {
        INT => "int".to_string(),
        UINT => "uint".into(),
        FLOAT => "float".into(),
        HANDLE => return Ok("handle".into()),
        BFLOAT => "bfloat".into(),
        BOOL => "bool".into(),
        c => match FLOAT_KINDS.iter().find(|k| k.0 == c) {
            Some((_, name, bits)) => format!("float{bits}_{name}"),
            None => return Err(Error::value(format!("DLDataType contains unknown type_code={c}"))),
        },
    };
    if t.code < BOOL || (t.code == BOOL && t.bits != 8) {
        out += &t.bits.to_string();
    }
    match t.lanes as i16 {
        l if l > 1 => out += &format!("x{l}"),
        l if l < -1 => out += &format!("xvscalex{}", -(l as i32)),
        _ => {}
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_aliases() {
        for s in [
            "int8",
            "uint32x4",
            "float16",
            "bfloat16",
            "bool",
            "handle",
            "",
            "float8_e4m3fn",
            "float8_e4m3fnuz",
            "float4_e2m1fnx2",
            "float6_e3m2fn",
            "int32xvscalex4",
        ] {
            assert_eq!(to_string(parse(s).unwrap()).unwrap(), s, "{s}");
        }
        for (alias, full) in [
            ("i8", "int8"),
            ("u16", "uint16"),
            ("f32", "float32"),
            ("bf16", "bfloat16"),
            ("fp8_e5m2", "float8_e5m2"),
            ("f8_e4m3", "float8_e4m3"),
            ("void", ""),
        ] {
            assert_eq!(to_string(parse(alias).unwrap()).unwrap(), full, "{alias}");
        }
        let b = parse("bool").unwrap();
        assert_eq!((b.code, b.bits, b.lanes), (6, 8, 1));
        assert_eq!(parse("float8_e3m4").unwrap().code, 7);
        assert_eq!(parse("float").unwrap().bits, 32);
        for bad in ["floaty", "float8_e9m9", "int8x", "int8x0", "int300", "custom[x]32"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}

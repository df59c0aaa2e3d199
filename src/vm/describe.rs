//! `describe`: an executable's functions and what their parameters must be, as JSON, read from
//! each function's own checks (`check_tensor_info` gives rank and dtype, `match_shape` the
//! dimensions; a symbolic dimension is named from the check's error context when it says).
//!
//! `{"format", "version", "functions": [{"name", "kind", "params": [{"name", "dtype", "shape"}],
//! "registers", "instructions"}], "constants"}`; dtype and shape are null when no check says.

use super::bytecode::{Arg, Instr, Reg};
use super::executable::{Constant, Executable, FuncInfo, FuncKind};
use serde_json::{json, Value as Json};

pub fn describe(exec: &Executable) -> String {
    let functions: Vec<Json> =
        exec.functions.iter().filter(|f| f.kind != FuncKind::Packed).map(|f| function(exec, f)).collect();
    json!({
        "format": exec.format.name(),
        "version": exec.version,
        "functions": functions,
        "constants": exec.constants.len(),
    })
    .to_string()
}

fn function(exec: &Executable, f: &FuncInfo) -> Json {
    let params: Vec<Json> = (0..f.num_args).map(|i| param(exec, f, i)).collect();
    json!({
        "name": f.name,
        "kind": f.kind.name(),
        "params": params,
        "registers": f.register_file_size,
        "instructions": f.code_len,
    })
}

/// The calls of `f` to builtin `name` whose first argument is parameter register `i`.
fn checks<'a>(exec: &'a Executable, f: &'a FuncInfo, name: &'a str, i: usize) -> impl Iterator<Item = &'a [Arg]> + 'a {
    exec.code_of(f).iter().filter_map(move |ins| match *ins {
        Instr::Call { func, args, .. } if exec.functions[func as usize].name == name => {
            let a = exec.call_args(args);
            (a.first() == Some(&Arg::Register(Reg::Index(i as u32)))).then_some(a)
        }
        _ => None,
    })
}

/// The largest rank `describe` spells out dimension by dimension.
const MAX_DESCRIBED_RANK: i64 = 64;

fn param(exec: &Executable, f: &FuncInfo, i: usize) -> Json {
    let name = f.param_names.get(i).cloned().unwrap_or_else(|| format!("arg{i}"));
    let info = checks(exec, f, "vm.builtin.check_tensor_info", i).next();
    let dtype = info.and_then(|a| match a.get(2) {
        Some(Arg::Const(c)) => match &exec.constants[*c as usize] {
            Constant::DType(d) => Some(d.to_string()),
            _ => None,
        },
        _ => None,
    });
    // A rank is only believed up to DLPack's practical limit: the number comes from the file.
    let ndim = info.and_then(|a| match a.get(1) {
        Some(Arg::Immediate(n)) if (0..=MAX_DESCRIBED_RANK).contains(n) => Some(*n as usize),
        _ => None,
    });
    let shape = checks(exec, f, "vm.builtin.match_shape", i)
        .next()
        .and_then(|a| match_dims(exec, a))
        .or_else(|| ndim.map(|n| vec![json!("?"); n]));
    json!({"name": name, "dtype": dtype, "shape": shape})
}

/// The dimensions a `match_shape(value, heap, n, (code, operand) * n, err_ctx)` call requires.
fn match_dims(exec: &Executable, a: &[Arg]) -> Option<Vec<Json>> {
    let n = match a.get(2) {
        Some(Arg::Immediate(n)) if *n >= 0 && a.len() == 4 + 2 * *n as usize => *n as usize,
        _ => return None,
    };
    let names = match a.last() {
        Some(Arg::Const(c)) => match &exec.constants[*c as usize] {
            Constant::Str(s) => annotated_dims(s),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    Some(
        (0..n)
            .map(|j| match (a[3 + 2 * j], a[4 + 2 * j]) {
                (Arg::Immediate(0), Arg::Immediate(v)) => json!(v),
                _ => json!(names.get(j).filter(|s| is_identifier(s)).cloned().unwrap_or_else(|| "?".into())),
            })
            .collect(),
    )
}

/// The dimensions written in an error context's annotation: `... R.Tensor((n, 16), ...)`.
fn annotated_dims(ctx: &str) -> Vec<String> {
    let Some(start) = ctx.find("R.Tensor((").map(|p| p + "R.Tensor((".len()) else { return Vec::new() };
    let Some(len) = ctx[start..].find(')') else { return Vec::new() };
    ctx[start..start + len].split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|h| h.is_ascii_alphabetic() || h == '_') && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_from_annotations() {
        let ctx = "ErrorContext(fn=main, loc=param[0], param=x, annotation=R.Tensor((n, 16), dtype=\"float32\")) ";
        assert_eq!(annotated_dims(ctx), vec!["n", "16"]);
        assert!(annotated_dims("no annotation").is_empty());
        assert!(is_identifier("n") && is_identifier("batch_1") && !is_identifier("n * 2") && !is_identifier("16"));
    }
}

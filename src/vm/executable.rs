//! The Relax VM executable: what `relax.build` / `tvm.compile` serialize, parsed from bytes of
//! either generation into one [`Executable`].
//!
//! Layout (little-endian, dmlc's u64-length vectors and strings):
//! - u64 magic: `0xD225DE2F4214151D` (TVM 0.18 and earlier) or `...1E` (the tvm-ffi releases,
//!   which add the memory-scope section), then the version string (`"0.14"` in both);
//! - the function table: u64 count, per function i32 kind (0 packed function, 1 VM function,
//!   2 VM TIR function), name, i64 start and end instruction, i64 argument count, i64 register
//!   file size, parameter names (vector of strings);
//! - newer magic only: the memory scopes, u64 count of (i64 constant index, string scope);
//! - the constants: u64 count, per constant an i32 tag and its payload. Tags of 0.18: 0 NDArray,
//!   1 DLDataType, 2 ShapeTuple, 3 String, 4 Int, 5 Float; of tvm-ffi (its type indices):
//!   70 Tensor, 5 DataType, 69 Shape, 65 Str, 1 Int, 3 Float. Payloads: a tensor record (as in
//!   params files), 4 bytes of dtype, u64 n + n i64 dims, u64 n + n bytes, i64, f64;
//! - the code: the instruction offsets (vector of i64), then the instruction words (vector of i64).
//!
//! Every count is bounded by the bytes that remain and every instruction of every VM function is
//! decoded and checked here (registers inside the register file, constant and function indices
//! inside their tables, jumps inside the function), so the interpreter never meets a bad index.

use super::bytecode::{Arg, Instr, Reg, OP_CALL, OP_GOTO, OP_IF, OP_RET};
use crate::abi::DLDataType;
use crate::runtime::base::byteio::{Input, Reader};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::tensor::ndarray::NDArray;
use crate::runtime::tensor::params::{read_ndarray, MIN_RECORD_BYTES};
use std::collections::HashMap;
use std::fmt::Write as _;

pub const MAGIC_V1: u64 = 0xD225_DE2F_4214_151D;
pub const MAGIC_V2: u64 = 0xD225_DE2F_4214_151E;
/// The only version string either generation writes.
pub const VERSION: &str = "0.14";

/// Largest register file accepted (TVM has no limit; this bounds what a hostile file allocates).
const MAX_REGISTERS: i64 = 1 << 20;

/// Which generation wrote the executable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// TVM 0.18 and earlier (`relax.build`): old magic, 0.18 constant tags.
    Tvm018,
    /// The tvm-ffi releases (apache-tvm 0.2x, `tvm.compile`): new magic, memory scopes, ffi tags.
    TvmFfi,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Tvm018 => "tvm-0.18",
            Format::TvmFfi => "tvm-ffi",
        }
    }
}

/// What a function-table entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FuncKind {
    /// Looked up by name: a kernel in the library, a VM builtin or a global function.
    Packed,
    /// Bytecode interpreted by the VM.
    Vm,
    /// A VM function compiled to TIR (`__vmtir__<name>` in the library).
    VmTir,
}

impl FuncKind {
    pub fn name(self) -> &'static str {
        match self {
            FuncKind::Packed => "packed_func",
            FuncKind::Vm => "vm_func",
            FuncKind::VmTir => "vm_tir_func",
        }
    }
}

/// One entry of the function table.
#[derive(Clone, Debug)]
pub struct FuncInfo {
    pub kind: FuncKind,
    pub name: String,
    pub num_args: usize,
    pub register_file_size: usize,
    pub param_names: Vec<String>,
    /// The instruction range in the file (start, end).
    pub instr_range: (usize, usize),
    /// Where this function's decoded instructions start in [`Executable::code`] (VM functions).
    pub code_start: usize,
    /// How many decoded instructions it has.
    pub code_len: usize,
}

/// A constant of the pool.
#[derive(Clone, Debug)]
pub enum Constant {
    Tensor(NDArray),
    Shape(Vec<i64>),
    Str(String),
    Int(i64),
    Float(f64),
    DType(DLDataType),
}

/// A parsed, checked executable.
#[derive(Debug)]
pub struct Executable {
    pub format: Format,
    pub version: String,
    pub functions: Vec<FuncInfo>,
    pub func_index: HashMap<String, usize>,
    pub memory_scopes: Vec<(i64, String)>,
    pub constants: Vec<Constant>,
    /// Decoded instructions of all VM functions, each function's run contiguous.
    pub code: Vec<Instr>,
    /// Call arguments, indexed by `Instr::Call::args`.
    pub args: Vec<Arg>,
}

impl Executable {
    /// Parse and check an executable's bytes.
    pub fn parse(bytes: &[u8]) -> Result<Executable> {
        let mut r = Reader::new(bytes, "Relax VM executable");
        let format = read_header(&mut r)?;
        let (version, functions) = (VERSION.to_string(), read_functions(&mut r)?);
        let memory_scopes = match format {
            Format::TvmFfi => read_memory_scopes(&mut r)?,
            Format::Tvm018 => Vec::new(),
        };
        let constants = read_constants(&mut r, format)?;
        let offsets = read_words(&mut r, "instruction offsets")?;
        let words = read_words(&mut r, "instruction data")?;
        if !r.is_at_end() {
            return Err(r.error(format!("{} bytes follow the code section", r.remaining())));
        }
        let mut exec = Executable {
            format,
            version,
            func_index: HashMap::new(),
            functions,
            memory_scopes,
            constants,
            code: Vec::new(),
            args: Vec::new(),
        };
        exec.decode_functions(&offsets, &words)?;
        exec.func_index = exec.functions.iter().enumerate().map(|(i, f)| (f.name.clone(), i)).collect();
        Ok(exec)
    }

    /// The index of the function called `name`.
    pub fn function(&self, name: &str) -> Option<usize> {
        self.func_index.get(name).copied()
    }

    /// A VM function's decoded instructions.
    pub fn code_of(&self, f: &FuncInfo) -> &[Instr] {
        &self.code[f.code_start..f.code_start + f.code_len]
    }

    /// The arguments of a call instruction.
    pub fn call_args(&self, (start, len): (u32, u32)) -> &[Arg] {
        &self.args[start as usize..(start + len) as usize]
    }

    fn decode_functions(&mut self, offsets: &[i64], words: &[i64]) -> Result<()> {
        for fi in 0..self.functions.len() {
            if self.functions[fi].kind != FuncKind::Vm {
                continue;
            }
            let f = self.functions[fi].clone();
            let (start, end) = f.instr_range;
            if start > end || end > offsets.len() {
                return Err(Error::value(format!(
                    "Relax VM executable: function `{}` spans instructions {start}..{end} but there are {}",
                    f.name,
                    offsets.len()
                )));
            }
            let code_start = self.code.len();
            for (pc, &offset) in offsets[start..end].iter().enumerate() {
                let instr = self.decode_one(offset, words, &f, pc, end - start).map_err(|e| {
                    e.context(format!("Relax VM executable: function `{}`, instruction {}", f.name, start + pc))
                })?;
                self.code.push(instr);
            }
            let info = &mut self.functions[fi];
            info.code_start = code_start;
            info.code_len = end - start;
        }
        Ok(())
    }

    /// Decode the instruction at word `offset`; `pc` is its index inside a function of `len`.
    fn decode_one(&mut self, offset: i64, words: &[i64], f: &FuncInfo, pc: usize, len: usize) -> Result<Instr> {
        let at = usize::try_from(offset)
            .ok()
            .filter(|&o| o < words.len())
            .ok_or_else(|| Error::value(format!("offset {offset} outside the {} instruction words", words.len())))?;
        let word = |i: usize| {
            words.get(at + i).copied().ok_or_else(|| Error::value("instruction runs past the instruction words"))
        };
        let regs = f.register_file_size;
        let jump = |off: i64| -> Result<i64> {
            let target = (pc as i64).checked_add(off).unwrap_or(-1);
            if off == 0 || target < 0 || target >= len as i64 {
                return Err(Error::value(format!("jump by {off} from {pc} leaves the function's {len} instructions")));
            }
            Ok(off)
        };
        match word(0)? {
            OP_CALL => {
                let dst = Reg::decode(word(1)?, regs, "call destination")?;
                let func = self.func_operand(word(2)?)?;
                let n = word(3)?;
                if n < 0 || n as u64 > (words.len() - at) as u64 {
                    return Err(Error::value(format!("call with {n} arguments runs past the instruction words")));
                }
                let start = self.args.len() as u32;
                for i in 0..n as usize {
                    let arg = self.decode_arg(word(4 + i)?, regs).map_err(|e| e.context(format!("argument {i}")))?;
                    self.args.push(arg);
                }
                Ok(Instr::Call { dst, func, args: (start, n as u32) })
            }
            OP_RET => match Reg::decode(word(1)?, regs, "returned register")? {
                Reg::Index(i) => Ok(Instr::Ret { result: i }),
                r => Err(Error::value(format!("return of the special register {}", r.text()))),
            },
            OP_GOTO => Ok(Instr::Goto { offset: jump(word(1)?)? }),
            OP_IF => {
                let cond = Reg::decode(word(1)?, regs, "condition")?;
                Ok(Instr::If { cond, false_offset: jump(word(2)?)? })
            }
            op => Err(Error::value(format!("unknown opcode {op}"))),
        }
    }

    fn func_operand(&self, v: i64) -> Result<u32> {
        if v < 0 || v as u64 >= self.functions.len() as u64 {
            return Err(Error::value(format!("function index {v} outside the table of {}", self.functions.len())));
        }
        Ok(v as u32)
    }

    fn decode_arg(&self, word: i64, regs: usize) -> Result<Arg> {
        let (kind, v) = Arg::split(word);
        match kind {
            0 => Ok(Arg::Register(Reg::decode(v, regs, "argument")?)),
            1 => Ok(Arg::Immediate(v)),
            2 if v >= 0 && (v as u64) < self.constants.len() as u64 => Ok(Arg::Const(v as u32)),
            2 => Err(Error::value(format!("constant index {v} outside the pool of {}", self.constants.len()))),
            3 => Ok(Arg::Func(self.func_operand(v)?)),
            k => Err(Error::value(format!("unknown argument kind {k}"))),
        }
    }
}

fn read_header(r: &mut Reader<'_>) -> Result<Format> {
    let magic = r.u64("magic")?;
    let format = match magic {
        MAGIC_V1 => Format::Tvm018,
        MAGIC_V2 => Format::TvmFfi,
        m => {
            return Err(r.error_at(
                0,
                format!("magic {m:#018x} is not a Relax VM executable's ({MAGIC_V1:#018x} or {MAGIC_V2:#018x})"),
            ))
        }
    };
    let at = r.position();
    let version = r.string("version")?;
    if version != VERSION {
        return Err(r.error_at(at, format!("version `{version}` is not one this runtime reads (`{VERSION}`)")));
    }
    Ok(format)
}

/// Smallest function-table entry: kind, name length, four i64, parameter count.
const MIN_FUNC_BYTES: usize = 4 + 8 + 4 * 8 + 8 + 8;

fn read_functions(r: &mut Reader<'_>) -> Result<Vec<FuncInfo>> {
    let n = r.count("function count", MIN_FUNC_BYTES)?;
    (0..n).map(|i| read_function(r).map_err(|e| e.context(format!("function {i}")))).collect()
}

fn read_function(r: &mut Reader<'_>) -> Result<FuncInfo> {
    let at = r.position();
    let kind = match r.i32("function kind")? {
        0 => FuncKind::Packed,
        1 => FuncKind::Vm,
        2 => FuncKind::VmTir,
        k => return Err(r.error_at(at, format!("unknown function kind {k}"))),
    };
    let name = r.string("function name")?;
    let (start, end) = (r.i64("start instruction")?, r.i64("end instruction")?);
    let num_args = r.i64("argument count")?;
    let regs = r.i64("register file size")?;
    let param_names = r.strings("parameter names")?;
    let bad = |msg: String| r.error_at(at, format!("function `{name}`: {msg}"));
    if start < 0 || end < 0 {
        return Err(bad(format!("negative instruction range {start}..{end}")));
    }
    if !(0..=MAX_REGISTERS).contains(&regs) {
        return Err(bad(format!("register file of {regs}")));
    }
    // Packed functions record -1 or -2 (variadic) arguments; only VM functions' counts are used.
    let num_args = match kind {
        FuncKind::Packed => 0,
        _ if (0..=regs).contains(&num_args) => num_args,
        _ => return Err(bad(format!("{num_args} arguments in a register file of {regs}"))),
    };
    Ok(FuncInfo {
        kind,
        name,
        num_args: num_args as usize,
        register_file_size: regs as usize,
        param_names,
        instr_range: (start as usize, end as usize),
        code_start: 0,
        code_len: 0,
    })
}

fn read_memory_scopes(r: &mut Reader<'_>) -> Result<Vec<(i64, String)>> {
    let n = r.count("memory scope count", 16)?;
    (0..n).map(|_| Ok((r.i64("memory scope constant index")?, r.string("memory scope")?))).collect()
}

/// The constant tags, by meaning.
#[derive(Clone, Copy)]
enum Tag {
    Tensor,
    DType,
    Shape,
    Str,
    Int,
    Float,
}

fn tag(format: Format, code: i32) -> Option<Tag> {
    Some(match (format, code) {
        (Format::Tvm018, 0) | (Format::TvmFfi, 70) => Tag::Tensor,
        (Format::Tvm018, 1) | (Format::TvmFfi, 5) => Tag::DType,
        (Format::Tvm018, 2) | (Format::TvmFfi, 69) => Tag::Shape,
        (Format::Tvm018, 3) | (Format::TvmFfi, 65) => Tag::Str,
        (Format::Tvm018, 4) | (Format::TvmFfi, 1) => Tag::Int,
        (Format::Tvm018, 5) | (Format::TvmFfi, 3) => Tag::Float,
        _ => return None,
    })
}

fn read_constants(r: &mut Reader<'_>, format: Format) -> Result<Vec<Constant>> {
    let n = r.count("constant count", 4)?;
    (0..n).map(|i| read_constant(r, format).map_err(|e| e.context(format!("constant {i}")))).collect()
}

fn read_constant(r: &mut Reader<'_>, format: Format) -> Result<Constant> {
    let at = r.position();
    let code = r.i32("constant tag")?;
    let tag = tag(format, code)
        .ok_or_else(|| r.error_at(at, format!("constant tag {code} is not one a {} executable uses", format.name())))?;
    Ok(match tag {
        Tag::Tensor => {
            if r.remaining() < MIN_RECORD_BYTES {
                return Err(r.truncated(MIN_RECORD_BYTES, "tensor constant"));
            }
            Constant::Tensor(read_ndarray(r)?)
        }
        Tag::DType => Constant::DType(DLDataType::new(r.u8("dtype code")?, r.u8("dtype bits")?, r.u16("dtype lanes")?)),
        Tag::Shape => {
            let n = r.count("shape length", 8)?;
            Constant::Shape((0..n).map(|_| r.i64("shape dimension")).collect::<Result<_>>()?)
        }
        Tag::Str => Constant::Str(r.string("string constant")?),
        Tag::Int => Constant::Int(r.i64("integer constant")?),
        Tag::Float => Constant::Float(f64::from_le_bytes(r.array("float constant")?)),
    })
}

fn read_words(r: &mut Reader<'_>, field: &str) -> Result<Vec<i64>> {
    let n = r.count(field, 8)?;
    (0..n).map(|_| r.i64(field)).collect()
}

// ---- text forms -------------------------------------------------------------------------------

impl Executable {
    fn func_name(&self, i: u32) -> &str {
        &self.functions[i as usize].name
    }

    fn arg_text(&self, a: &Arg) -> String {
        match *a {
            Arg::Register(r) => r.text(),
            Arg::Immediate(v) => format!("i{v}"),
            Arg::Const(c) => format!("c[{c}]"),
            Arg::Func(f) => format!("f[{}]", self.func_name(f)),
        }
    }

    fn instr_text(&self, i: &Instr) -> String {
        match *i {
            Instr::Call { dst, func, args } => {
                let args: Vec<String> = self.call_args(args).iter().map(|a| self.arg_text(a)).collect();
                format!("call  {:<16} in: {:<12} dst: {}", self.func_name(func), args.join(", "), dst.text())
            }
            Instr::Ret { result } => format!("ret   %{result}"),
            Instr::Goto { offset } => format!("goto  {offset}"),
            Instr::If { cond, false_offset } => format!("If    {}, {false_offset}", cond.text()),
        }
    }

    /// TVM's `as_text`: every function, VM functions with their instructions.
    pub fn as_text(&self) -> String {
        let mut s = String::new();
        for f in &self.functions {
            match f.kind {
                FuncKind::Packed => writeln!(s, "@{} packed_func;\n", f.name),
                FuncKind::VmTir => writeln!(s, "@{} num_inputs={} vm_tir_func;\n", f.name, f.num_args),
                FuncKind::Vm => {
                    let _ = writeln!(s, "@{}:", f.name);
                    for i in self.code_of(f) {
                        let _ = writeln!(s, "  {}", self.instr_text(i));
                    }
                    writeln!(s)
                }
            }
            .expect("writing to a String");
        }
        s
    }

    /// TVM's `stats`: the constant pool and the function names.
    pub fn stats(&self) -> String {
        let consts: Vec<String> = self.constants.iter().map(constant_text).collect();
        let names: Vec<&str> = self.functions.iter().map(|f| f.name.as_str()).collect();
        format!(
            "Relax VM executable statistics:\n  Constant pool (# {}): [{}]\n  Globals (#{}): [{}]\n",
            consts.len(),
            consts.join(", "),
            names.len(),
            names.join(", ")
        )
    }
}

fn dims_text(d: &[i64]) -> String {
    d.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
}

fn constant_text(c: &Constant) -> String {
    match c {
        Constant::Tensor(t) if t.shape().is_empty() => "scalar".into(),
        Constant::Tensor(t) => format!("[{}]", dims_text(t.shape())),
        Constant::Shape(d) => format!("shapetuple[{}]", dims_text(d)),
        Constant::Str(s) => format!("\"{s}\""),
        Constant::Int(v) => v.to_string(),
        Constant::Float(v) => v.to_string(),
        Constant::DType(t) => t.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::base::byteio::Writer;

    fn header(w: &mut Writer, magic: u64) {
        w.u64(magic);
        w.string(VERSION);
    }

    /// An executable with one VM function `main(x)` returning its argument.
    fn identity(magic: u64) -> Vec<u8> {
        let mut w = Writer::new();
        header(&mut w, magic);
        w.u64(1);
        w.i32(1);
        w.string("main");
        for v in [0i64, 1, 1, 1] {
            w.i64(v);
        }
        w.strings(&["x"]);
        if magic == MAGIC_V2 {
            w.u64(0);
        }
        w.u64(0);
        w.u64(1);
        w.i64(0);
        w.u64(2);
        w.i64(OP_RET);
        w.i64(0);
        w.into_bytes()
    }

    #[test]
    fn both_generations_parse() {
        let a = Executable::parse(&identity(MAGIC_V1)).unwrap();
        assert_eq!(a.format, Format::Tvm018);
        let b = Executable::parse(&identity(MAGIC_V2)).unwrap();
        assert_eq!(b.format, Format::TvmFfi);
        assert_eq!(b.code, vec![Instr::Ret { result: 0 }]);
        assert_eq!(b.as_text(), "@main:\n  ret   %0\n\n");
    }

    #[test]
    fn malformed_bytes_are_errors() {
        let good = identity(MAGIC_V1);
        for cut in 0..good.len() {
            assert!(Executable::parse(&good[..cut]).is_err(), "prefix of {cut} bytes parsed");
        }
        let mut bad_magic = good.clone();
        bad_magic[0] ^= 1;
        assert!(Executable::parse(&bad_magic).unwrap_err().message().contains("magic"));
        let mut bad_version = good.clone();
        bad_version[16] = b'9';
        assert!(Executable::parse(&bad_version).unwrap_err().message().contains("version `9.14`"));
        let mut bad_reg = good.clone();
        let n = bad_reg.len();
        bad_reg[n - 8] = 7;
        let e = Executable::parse(&bad_reg).unwrap_err();
        assert!(e.message().contains("register 7 outside the register file of 1"), "{e}");
    }
}

//! The Relax VM's instructions, as the executable stores them: a flat array of 64-bit words, one
//! instruction at each offset the offset table names.
//!
//! Layouts (TVM's `relax_vm/bytecode.h`, unchanged between 0.18 and the tvm-ffi releases):
//! - `Call`: opcode 1, dst register, function index, argument count, then the arguments;
//! - `Ret`: opcode 2, result register;
//! - `Goto`: opcode 3, pc offset (relative);
//! - `If`: opcode 4, condition register, false offset (relative; true falls through).
//!
//! An argument word holds its kind in the top 8 bits and a sign-extended 56-bit value below.
//! Registers at or above 2^54 are special: the void register (no value) and the VM register (the
//! VM context a builtin receives).

use crate::runtime::base::error::{Error, Result};

pub const OP_CALL: i64 = 1;
pub const OP_RET: i64 = 2;
pub const OP_GOTO: i64 = 3;
pub const OP_IF: i64 = 4;

/// First special register.
pub const BEGIN_SPECIAL_REG: i64 = 1 << 54;
/// The void register: an argument reading it gets no value; a call writing it drops its result.
pub const VOID_REGISTER: i64 = BEGIN_SPECIAL_REG;
/// The VM register: the VM context (builtins that allocate take it).
pub const VM_REGISTER: i64 = BEGIN_SPECIAL_REG + 1;

const KIND_BITS: u32 = 8;
const VALUE_BITS: u32 = 64 - KIND_BITS;
const VALUE_MASK: i64 = (1 << VALUE_BITS) - 1;

/// A register operand: an ordinary register of the frame, or one of the two special ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reg {
    Index(u32),
    Void,
    Vm,
}

impl Reg {
    /// Decode a register word; ordinary registers must be below `file_size`.
    pub fn decode(word: i64, file_size: usize, what: &str) -> Result<Reg> {
        match word {
            VOID_REGISTER => Ok(Reg::Void),
            VM_REGISTER => Ok(Reg::Vm),
            r if r >= 0 && (r as u64) < file_size as u64 => Ok(Reg::Index(r as u32)),
            r => Err(Error::value(format!("{what}: register {r} outside the register file of {file_size}"))),
        }
    }

    pub fn text(self) -> String {
        match self {
            Reg::Index(i) => format!("%{i}"),
            Reg::Void => "%void".into(),
            Reg::Vm => "%vm".into(),
        }
    }
}

/// One argument of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    Register(Reg),
    Immediate(i64),
    Const(u32),
    Func(u32),
}

impl Arg {
    /// Kind and sign-extended value of an argument word.
    pub fn split(word: i64) -> (u8, i64) {
        let kind = ((word >> VALUE_BITS) & 0xFF) as u8;
        let value = ((word & VALUE_MASK) << KIND_BITS) >> KIND_BITS;
        (kind, value)
    }

    /// The word TVM stores for an argument of `kind` (0 register .. 3 function) and `value`.
    pub fn word(kind: u8, value: i64) -> i64 {
        ((kind as i64) << VALUE_BITS) | (value & VALUE_MASK)
    }
}

/// A decoded instruction; call arguments live in the program's argument table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instr {
    Call { dst: Reg, func: u32, args: (u32, u32) },
    Ret { result: u32 },
    Goto { offset: i64 },
    If { cond: Reg, false_offset: i64 },
}

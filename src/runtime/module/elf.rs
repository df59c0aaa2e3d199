//! A check of a shared library's ELF structure before `dlopen` maps it.
//!
//! The dynamic loader trusts the file: a program header that maps bytes past the end of a
//! truncated file faults (SIGBUS) on the first access, inside the loader, with no error to
//! report. So before `dlopen` the runtime reads the ELF header and the program headers and
//! refuses a file whose header is wrong for this process (magic, class, byte order, version,
//! type, machine, entry sizes) or whose program header table, segments or section header table
//! reach past the end of the file. Only the header and the tables are read, never the segments.
//!
//! ELF64 only (every 64-bit platform the runtime builds for); `expected` says what the process
//! needs, so the checks are testable on any host.
//!
//! Hand-written rather than on the `object` crate (0.39's ELF reader, measured on 2026-11-29):
//! that reader accepts a truncated library without section headers whose 8 segments all reach
//! past the end of the file (the SIGBUS case this check exists for), so the segment checks
//! would stay ours; it reads 913 880 bytes of a 46 MB library to list its dynamic symbols where
//! this reads 24 403 (it loads `.symtab` and its strings too); and its errors do not say which
//! table or byte range is wrong. What it would replace is the field decoding, about 70 lines.

use std::fmt;
use std::io;

/// Size of the ELF64 file header.
pub const EHDR_SIZE: u64 = 64;
/// Size of one ELF64 program header.
const PHDR_SIZE: u64 = 56;
/// Size of one ELF64 section header.
const SHDR_SIZE: u64 = 64;
const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const ET_DYN: u16 = 3;

/// What the loading process accepts: byte order and machine (`None`: any machine).
#[derive(Clone, Copy, Debug)]
pub struct Expected {
    pub little_endian: bool,
    pub machine: Option<u16>,
}

impl Expected {
    /// This process: its byte order and, where known, its ELF machine number.
    pub fn host() -> Expected {
        let machine = if cfg!(target_arch = "x86_64") {
            Some(62)
        } else if cfg!(target_arch = "aarch64") {
            Some(183)
        } else if cfg!(target_arch = "riscv64") {
            Some(243)
        } else if cfg!(target_arch = "powerpc64") {
            Some(21)
        } else if cfg!(target_arch = "s390x") {
            Some(22)
        } else {
            None
        };
        Expected { little_endian: cfg!(target_endian = "little"), machine }
    }
}

/// Why a file is not a loadable shared library (or could not be read).
#[derive(Debug)]
pub enum ElfError {
    /// The structure is wrong; the text says what.
    Invalid(String),
    /// Reading the file failed.
    Io(io::Error),
}

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElfError::Invalid(s) => f.write_str(s),
            ElfError::Io(e) => write!(f, "cannot read the file: {e}"),
        }
    }
}

type Check<T = ()> = std::result::Result<T, ElfError>;

fn invalid<T>(msg: impl Into<String>) -> Check<T> {
    Err(ElfError::Invalid(msg.into()))
}

/// Random access to the bytes of a file (or of a slice, for tests and fuzzing).
pub trait Bytes {
    /// Length in bytes.
    fn size(&self) -> u64;
    /// Fill `buf` from `offset`; the range is inside `len()` (callers check first).
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
}

impl Bytes for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
        let end = start.checked_add(buf.len()).ok_or(io::ErrorKind::InvalidInput)?;
        let src = self.get(start..end).ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// An open file and its length (taken once, before reading).
pub struct FileBytes {
    pub file: std::fs::File,
    pub len: u64,
}

impl Bytes for FileBytes {
    fn size(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, offset)
    }
}

/// Little- or big-endian field reads from a header's bytes.
struct Fields<'a> {
    b: &'a [u8],
    le: bool,
}

impl Fields<'_> {
    /// `N` bytes at `at`, in little-endian order.
    fn le_bytes<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut v: [u8; N] = self.b[at..at + N].try_into().expect("a field inside the header");
        if !self.le {
            v.reverse();
        }
        v
    }
    fn u16(&self, at: usize) -> u16 {
        u16::from_le_bytes(self.le_bytes(at))
    }
    fn u32(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.le_bytes(at))
    }
    fn u64(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.le_bytes(at))
    }
}

/// The ELF header fields the checks use.
struct Header {
    le: bool,
    phoff: u64,
    shoff: u64,
    phentsize: u16,
    phnum: u16,
    shentsize: u16,
    shnum: u16,
}

/// One program header.
struct Segment {
    kind: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
}

/// Check that `data` holds a shared library this process could map: see the module comment.
pub fn check(data: &(impl Bytes + ?Sized), expected: Expected) -> Check {
    let len = data.size();
    let header = read_header(data, expected)?;
    let segments = read_segments(data, &header)?;
    for (i, s) in segments.iter().enumerate() {
        check_segment(i, s, len)?;
    }
    check_dynamic(&segments)?;
    check_sections(data, &header)
}

fn read_header(data: &(impl Bytes + ?Sized), expected: Expected) -> Check<Header> {
    let len = data.size();
    if len < EHDR_SIZE {
        return invalid(format!(
            "the file is {len} bytes, too short for an ELF header ({EHDR_SIZE} bytes): it is truncated or not a shared library"
        ));
    }
    let mut b = [0u8; EHDR_SIZE as usize];
    data.read_at(0, &mut b).map_err(ElfError::Io)?;
    check_ident(&b, expected)?;
    let f = Fields { b: &b, le: b[5] == 1 };
    let (kind, machine) = (f.u16(16), f.u16(18));
    if kind != ET_DYN {
        let what = match kind {
            1 => "a relocatable object (ET_REL, a .o file)".to_string(),
            2 => "an executable (ET_EXEC)".to_string(),
            4 => "a core dump (ET_CORE)".to_string(),
            k => format!("of ELF type {k}"),
        };
        return invalid(format!("invalid ELF header: the file is {what}, not a shared library (ET_DYN)"));
    }
    if let Some(want) = expected.machine.filter(|&m| m != machine) {
        return invalid(format!(
            "the library is built for {}, this process runs on {}",
            machine_name(machine),
            machine_name(want)
        ));
    }
    let header = Header {
        le: f.le,
        phoff: f.u64(32),
        shoff: f.u64(40),
        phentsize: f.u16(54),
        phnum: f.u16(56),
        shentsize: f.u16(58),
        shnum: f.u16(60),
    };
    if f.u16(52) as u64 != EHDR_SIZE || header.phentsize as u64 != PHDR_SIZE {
        return invalid(format!(
            "invalid ELF header: header size {} and program header size {} (ELF64 has {EHDR_SIZE} and {PHDR_SIZE})",
            f.u16(52),
            header.phentsize
        ));
    }
    Ok(header)
}

/// Magic, class, byte order and version (`e_ident`).
fn check_ident(b: &[u8], expected: Expected) -> Check {
    if b[..4] != *b"\x7fELF" {
        return invalid(format!(
            "invalid ELF header: not an ELF file (it starts with {:02x} {:02x} {:02x} {:02x}, not 7f 45 4c 46)",
            b[0], b[1], b[2], b[3]
        ));
    }
    match b[4] {
        2 => {}
        1 => return invalid("the library is a 32-bit ELF file; this process is 64-bit"),
        c => return invalid(format!("invalid ELF header: unknown ELF class {c}")),
    }
    let want = if expected.little_endian { 1 } else { 2 };
    match b[5] {
        d if d == want => {}
        1 | 2 => {
            let order = |d: u8| if d == 1 { "little-endian" } else { "big-endian" };
            return invalid(format!("the library is {}; this process is {}", order(b[5]), order(want)));
        }
        d => return invalid(format!("invalid ELF header: unknown byte order {d}")),
    }
    if b[6] != 1 {
        return invalid(format!("invalid ELF header: ELF version {} (only version 1 exists)", b[6]));
    }
    Ok(())
}

fn machine_name(m: u16) -> String {
    let name = match m {
        3 => "x86",
        21 => "PowerPC 64",
        22 => "s390",
        40 => "ARM",
        62 => "x86-64",
        183 => "AArch64",
        243 => "RISC-V",
        _ => return format!("ELF machine {m}"),
    };
    format!("{name} (ELF machine {m})")
}

/// `[start, start + size)` of the file, or an error naming `what` when it is not inside `len`.
fn in_file(what: impl FnOnce() -> String, start: u64, size: u64, len: u64) -> Check {
    match start.checked_add(size) {
        Some(end) if end <= len => Ok(()),
        Some(end) => invalid(format!(
            "{} (file bytes {start}..{end}) extends past the end of the file ({len} bytes): the file is truncated",
            what()
        )),
        None => invalid(format!("{} has an impossible file range (offset {start}, size {size})", what())),
    }
}

fn read_segments(data: &(impl Bytes + ?Sized), h: &Header) -> Check<Vec<Segment>> {
    if h.phnum == 0 {
        return invalid("invalid ELF header: no program headers, so there is nothing to load");
    }
    let table = h.phnum as u64 * PHDR_SIZE;
    in_file(|| "the program header table".into(), h.phoff, table, data.size())?;
    let mut b = vec![0u8; table as usize];
    data.read_at(h.phoff, &mut b).map_err(ElfError::Io)?;
    let segments = b
        .chunks_exact(PHDR_SIZE as usize)
        .map(|p| {
            let f = Fields { b: p, le: h.le };
            Segment {
                kind: f.u32(0),
                offset: f.u64(8),
                vaddr: f.u64(16),
                filesz: f.u64(32),
                memsz: f.u64(40),
                align: f.u64(48),
            }
        })
        .collect::<Vec<_>>();
    if !segments.iter().any(|s| s.kind == PT_LOAD) {
        return invalid("no loadable segment (PT_LOAD): not a shared library");
    }
    Ok(segments)
}

fn segment_name(kind: u32) -> String {
    match kind {
        PT_LOAD => "PT_LOAD".into(),
        PT_DYNAMIC => "PT_DYNAMIC".into(),
        3 => "PT_INTERP".into(),
        4 => "PT_NOTE".into(),
        6 => "PT_PHDR".into(),
        7 => "PT_TLS".into(),
        0x6474_e550 => "PT_GNU_EH_FRAME".into(),
        0x6474_e552 => "PT_GNU_RELRO".into(),
        0x6474_e553 => "PT_GNU_PROPERTY".into(),
        k => format!("type {k:#x}"),
    }
}

/// Every segment's file bytes lie inside the file; a load segment's sizes are consistent.
fn check_segment(i: usize, s: &Segment, len: u64) -> Check {
    let what = || format!("program header {i} ({})", segment_name(s.kind));
    if s.filesz > 0 {
        in_file(what, s.offset, s.filesz, len)?;
    }
    if s.kind != PT_LOAD {
        return Ok(());
    }
    if s.filesz > s.memsz {
        return invalid(format!(
            "{}: {} bytes in the file but {} in memory (the file part cannot be larger)",
            what(),
            s.filesz,
            s.memsz
        ));
    }
    if s.align > 1 && !s.align.is_power_of_two() {
        return invalid(format!("{}: alignment {} is not a power of two", what(), s.align));
    }
    if s.vaddr.checked_add(s.memsz).is_none() {
        return invalid(format!("{}: address {:#x} + size {:#x} overflows", what(), s.vaddr, s.memsz));
    }
    Ok(())
}

/// The dynamic segment exists and lies inside a load segment: the loader reads it from memory.
fn check_dynamic(segments: &[Segment]) -> Check {
    let Some((i, d)) = segments.iter().enumerate().find(|(_, s)| s.kind == PT_DYNAMIC) else {
        return invalid("no dynamic segment (PT_DYNAMIC): not a shared library");
    };
    let end = d.vaddr.checked_add(d.memsz);
    let inside = |s: &&Segment| {
        s.kind == PT_LOAD && s.vaddr <= d.vaddr && end.is_some_and(|e| e <= s.vaddr.saturating_add(s.memsz))
    };
    if !segments.iter().any(|s| inside(&s)) {
        return invalid(format!(
            "program header {i} (PT_DYNAMIC) at address {:#x} is outside every load segment",
            d.vaddr
        ));
    }
    Ok(())
}

/// The section header table (unused by the loader, always written at the end of the file by
/// linkers) lies inside the file: the cheapest sign that the file is whole.
fn check_sections(data: &(impl Bytes + ?Sized), h: &Header) -> Check {
    if h.shoff == 0 {
        return Ok(());
    }
    let len = data.size();
    if h.shentsize as u64 != SHDR_SIZE {
        return invalid(format!("invalid ELF header: section header size {} (ELF64 has {SHDR_SIZE})", h.shentsize));
    }
    let what = || "the section header table".to_string();
    let count = if h.shnum > 0 {
        h.shnum as u64
    } else {
        // More than 0xff00 sections: the count is the first entry's sh_size.
        in_file(what, h.shoff, SHDR_SIZE, len)?;
        let mut b = [0u8; 8];
        data.read_at(h.shoff + 32, &mut b).map_err(ElfError::Io)?;
        Fields { b: &b, le: h.le }.u64(0)
    };
    let size = count.checked_mul(SHDR_SIZE).ok_or_else(|| ElfError::Invalid(format!("{count} sections")))?;
    in_file(what, h.shoff, size, len)
}

/// `SHT_DYNSYM`: the section type of the dynamic symbol table.
const SHT_DYNSYM: u32 = 11;
/// Size of one ELF64 symbol table entry.
const SYM_SIZE: u64 = 24;
/// The most bytes of symbol and string tables read: far above any model library's.
const MAX_TABLE: u64 = 64 << 20;

/// A library's dynamic symbols by name: those it uses but does not define (its imports) and
/// those it defines.
#[derive(Debug, Default)]
pub struct DynamicSymbols {
    pub imports: Vec<String>,
    pub defined: std::collections::HashSet<String>,
}

/// The names of the dynamic symbols `data` uses but does not define (its imports); see
/// [`dynamic_symbols`].
pub fn undefined_symbols(data: &(impl Bytes + ?Sized), expected: Expected) -> Check<Vec<String>> {
    Ok(dynamic_symbols(data, expected)?.map(|s| s.imports).unwrap_or_default())
}

/// The dynamic symbols of `data`, read from the section headers (`SHT_DYNSYM` and its string
/// table); `None` for a library without section headers. Tables that do not fit the file or
/// exceed 64 MiB are an error. Call after [`check`] accepted the file.
pub fn dynamic_symbols(data: &(impl Bytes + ?Sized), expected: Expected) -> Check<Option<DynamicSymbols>> {
    let h = read_header(data, expected)?;
    if h.shoff == 0 || h.shnum == 0 || h.shentsize as u64 != SHDR_SIZE {
        return Ok(None);
    }
    let sections = read_table(data, h.shoff, h.shnum as u64 * SHDR_SIZE, "the section header table")?;
    let section = |i: u64| sections.get((i * SHDR_SIZE) as usize..((i + 1) * SHDR_SIZE) as usize);
    let mut out = DynamicSymbols::default();
    for i in 0..h.shnum as u64 {
        let s = Fields { b: section(i).expect("inside the table"), le: h.le };
        if s.u32(4) != SHT_DYNSYM {
            continue;
        }
        let strings = section(s.u32(40) as u64)
            .ok_or_else(|| ElfError::Invalid(format!("section {i} (.dynsym) links to a missing string table")))?;
        let st = Fields { b: strings, le: h.le };
        let names = read_table(data, st.u64(24), st.u64(32), "the dynamic string table")?;
        let symbols = read_table(data, s.u64(24), s.u64(32), "the dynamic symbol table")?;
        for sym in symbols.chunks_exact(SYM_SIZE as usize) {
            let f = Fields { b: sym, le: h.le };
            if f.u32(0) == 0 {
                continue;
            }
            let name = name_at(&names, f.u32(0) as usize)?;
            match f.u16(6) {
                0 => out.imports.push(name),
                _ => {
                    out.defined.insert(name);
                }
            }
        }
    }
    Ok(Some(out))
}

/// `size` bytes at `offset`, when inside the file and at most [`MAX_TABLE`].
fn read_table(data: &(impl Bytes + ?Sized), offset: u64, size: u64, what: &str) -> Check<Vec<u8>> {
    in_file(|| what.to_string(), offset, size, data.size())?;
    if size > MAX_TABLE {
        return invalid(format!("{what} is {size} bytes (at most {MAX_TABLE} are read)"));
    }
    let mut b = vec![0u8; size as usize];
    data.read_at(offset, &mut b).map_err(ElfError::Io)?;
    Ok(b)
}

/// The NUL-terminated name at `at` of a string table.
fn name_at(table: &[u8], at: usize) -> Check<String> {
    let rest = table.get(at..).unwrap_or_default();
    match rest.iter().position(|&c| c == 0) {
        Some(end) => Ok(String::from_utf8_lossy(&rest[..end]).into_owned()),
        None => invalid(format!("a symbol name at {at} runs past the end of the dynamic string table")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: Expected = Expected { little_endian: true, machine: Some(62) };

    /// A minimal valid ELF64 shared library image: header, two program headers (LOAD covering
    /// the whole file, DYNAMIC inside it), 64 bytes of "dynamic section", one section header.
    fn image() -> Vec<u8> {
        let mut b = vec![0u8; 64 + 2 * 56 + 64 + 64];
        b[..4].copy_from_slice(b"\x7fELF");
        (b[4], b[5], b[6]) = (2, 1, 1);
        b[16..18].copy_from_slice(&ET_DYN.to_le_bytes());
        b[18..20].copy_from_slice(&62u16.to_le_bytes());
        b[32..40].copy_from_slice(&64u64.to_le_bytes()); // phoff
        b[40..48].copy_from_slice(&(64u64 + 112 + 64).to_le_bytes()); // shoff
        b[52..54].copy_from_slice(&64u16.to_le_bytes());
        b[54..56].copy_from_slice(&56u16.to_le_bytes());
        b[56..58].copy_from_slice(&2u16.to_le_bytes());
        b[58..60].copy_from_slice(&64u16.to_le_bytes());
        b[60..62].copy_from_slice(&1u16.to_le_bytes());
        let len = b.len() as u64;
        phdr(&mut b, 0, PT_LOAD, 0, 0, len, len + 100, 0x1000);
        phdr(&mut b, 1, PT_DYNAMIC, 176, 176, 64, 64, 8);
        b
    }

    #[allow(clippy::too_many_arguments)]
    fn phdr(b: &mut [u8], i: usize, kind: u32, off: u64, vaddr: u64, filesz: u64, memsz: u64, align: u64) {
        let p = &mut b[64 + i * 56..64 + (i + 1) * 56];
        p[..4].copy_from_slice(&kind.to_le_bytes());
        for (at, v) in [(8, off), (16, vaddr), (24, vaddr), (32, filesz), (40, memsz), (48, align)] {
            p[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
    }

    fn err(b: &[u8]) -> String {
        match check(b, HOST) {
            Err(e) => e.to_string(),
            Ok(()) => panic!("accepted"),
        }
    }

    #[test]
    fn a_whole_image_passes_and_every_cut_fails() {
        let b = image();
        check(&b[..], HOST).unwrap();
        for cut in 0..b.len() {
            let e = err(&b[..cut]);
            assert!(e.contains(&format!("{cut} bytes")), "cut {cut}: {e}");
        }
        assert!(err(&b[..10]).contains("too short for an ELF header"));
        assert!(err(&b[..100]).contains("the program header table (file bytes 64..176) extends past the end"));
        assert!(err(&b[..200]).contains("program header 0 (PT_LOAD) (file bytes 0..304)"));
    }

    #[test]
    fn the_header_must_suit_this_process() {
        let cases: &[(usize, u8, &str)] = &[
            (0, b'#', "not an ELF file (it starts with 23 45 4c 46"),
            (4, 1, "32-bit"),
            (4, 9, "unknown ELF class 9"),
            (5, 2, "the library is big-endian; this process is little-endian"),
            (5, 7, "unknown byte order 7"),
            (6, 2, "ELF version 2"),
            (16, 1, "relocatable object"),
            (16, 2, "executable (ET_EXEC)"),
            (18, 183, "built for AArch64 (ELF machine 183), this process runs on x86-64 (ELF machine 62)"),
            (54, 32, "program header size 32"),
            (58, 40, "section header size 40"),
        ];
        for &(at, value, want) in cases {
            let mut b = image();
            b[at] = value;
            let e = err(&b);
            assert!(e.contains(want), "byte {at} = {value}: {e}");
        }
        let mut b = image();
        b[18] = 183;
        check(&b[..], Expected { machine: None, ..HOST }).unwrap();
    }

    #[test]
    fn segments_must_be_consistent() {
        let mut b = image();
        phdr(&mut b, 0, PT_LOAD, 0, 0, 300, 200, 0x1000);
        assert!(err(&b).contains("300 bytes in the file but 200 in memory"));
        phdr(&mut b, 0, PT_LOAD, 0, 0, 10, 300, 3);
        assert!(err(&b).contains("alignment 3 is not a power of two"));
        phdr(&mut b, 0, PT_LOAD, u64::MAX, 0, 10, 300, 8);
        assert!(err(&b).contains("impossible file range"));
        phdr(&mut b, 0, PT_LOAD, 0, u64::MAX, 10, 300, 8);
        assert!(err(&b).contains("overflows"));
        phdr(&mut b, 0, PT_LOAD, 0, 0x1000, 10, 300, 8);
        assert!(err(&b).contains("(PT_DYNAMIC) at address 0xb0 is outside every load segment"));
        phdr(&mut b, 0, 4, 0, 0, 10, 10, 8);
        assert!(err(&b).contains("no loadable segment"));
        let mut b = image();
        phdr(&mut b, 1, 4, 176, 176, 64, 64, 8);
        assert!(err(&b).contains("no dynamic segment"));
        b[56] = 0;
        assert!(err(&b).contains("no program headers"));
    }

    #[test]
    fn a_section_count_past_0xff00_is_read_from_the_first_entry() {
        let mut b = image();
        b[60] = 0;
        b[240 + 32..240 + 40].copy_from_slice(&1u64.to_le_bytes());
        check(&b[..], HOST).unwrap();
        b[240 + 32..240 + 40].copy_from_slice(&2u64.to_le_bytes());
        assert!(err(&b).contains("the section header table (file bytes 240..368)"));
        b[240 + 32..240 + 40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(err(&b).contains("sections"));
    }

    #[test]
    fn the_test_binary_passes() {
        // The test binary itself is an ELF64 file of this machine (a PIE: ET_DYN on most
        // toolchains); check it is accepted or refused only for its type.
        let exe = std::env::current_exe().unwrap();
        let file = std::fs::File::open(&exe).unwrap();
        let len = file.metadata().unwrap().len();
        match check(&FileBytes { file, len }, Expected::host()) {
            Ok(()) => {}
            Err(e) => assert!(e.to_string().contains("executable (ET_EXEC)"), "{}: {e}", exe.display()),
        }
    }
}

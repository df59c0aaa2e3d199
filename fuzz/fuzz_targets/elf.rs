//! `runtime::module::elf::check` (the check of a shared library before `dlopen`) on arbitrary bytes,
//! for this machine and for any machine.
//!
//! Properties checked: no panic, crash or unbounded allocation (the check reads at most the
//! header, the program header table and one section header; reading the imports, the section
//! header table and at most 64 MiB of symbol tables); the verdict does not depend on
//! how the bytes are read (a slice, or a file of the same bytes); an accepted file has a whole
//! ELF header, and cutting its last byte off is refused whenever the section headers end it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;
use tvm_runtime::runtime::module::elf::{check, undefined_symbols, Expected, FileBytes, EHDR_SIZE};

/// One temporary file per process (unlinked at once), rewritten with each input.
fn scratch_file() -> &'static File {
    static FILE: OnceLock<File> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("elf-fuzz-{}", std::process::id()));
        let file = File::options().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        file
    })
}

/// The same bytes as a file.
fn as_file(data: &[u8]) -> FileBytes {
    let file = scratch_file();
    file.set_len(0).unwrap();
    file.write_all_at(data, 0).unwrap();
    FileBytes { file: file.try_clone().unwrap(), len: data.len() as u64 }
}

/// Whether the section header table ends exactly at the end of `data` (as linkers write it).
fn sections_end_file(data: &[u8]) -> bool {
    let shoff = u64::from_le_bytes(data[40..48].try_into().unwrap());
    let shnum = u16::from_le_bytes([data[60], data[61]]) as u64;
    data[5] == 1 && shoff > 0 && shnum > 0 && shoff.checked_add(shnum * 64) == Some(data.len() as u64)
}

fuzz_target!(|data: &[u8]| {
    let any = Expected { machine: None, ..Expected::host() };
    let here = check(data, Expected::host());
    let anywhere = check(data, any);
    assert!(here.is_err() || anywhere.is_ok(), "accepted for this machine but not for any machine");
    let from_file = check(&as_file(data), any);
    assert_eq!(anywhere.is_ok(), from_file.is_ok(), "slice and file verdicts differ");
    if anywhere.is_ok() {
        // The imports, read from the section headers, never panic or over-allocate either.
        let _ = undefined_symbols(data, any);
        assert!(data.len() as u64 >= EHDR_SIZE && data.starts_with(b"\x7fELF"));
        if sections_end_file(data) {
            assert!(check(&data[..data.len() - 1], any).is_err(), "a cut file was accepted");
        }
    }
});

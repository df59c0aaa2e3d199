//! `tvm-rt params`: list, extract (to `.npy`) and pack (from `.npy`) TVM params files.

use crate::fail::{Failure, FileContext};
use crate::inputs::name_and_path;
use crate::table::{render, thousands};
use crate::tensors::{read_npy, write_npy};
use serde::Serialize;
use std::path::{Path, PathBuf};
use tvm_runtime::runtime::tensor::ndarray::NDArray;
use tvm_runtime::runtime::tensor::params::{load_params_file, save_params};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// List the tensors of a params file: name, shape, dtype, bytes
    #[command(after_help = crate::EXIT_CODES)]
    List {
        #[arg(value_name = "FILE.params")]
        file: PathBuf,
        /// Print JSON instead of a table
        #[arg(long)]
        json: bool,
    },
    /// Write each tensor of a params file to DIR/<name>.npy
    #[command(after_help = crate::EXIT_CODES)]
    Extract {
        #[arg(value_name = "FILE.params")]
        file: PathBuf,
        /// Directory for the .npy files (created if missing)
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Pack .npy files into a params file, in the order given
    #[command(after_help = crate::EXIT_CODES)]
    Pack {
        /// The params file to write
        #[arg(long, value_name = "FILE.params")]
        out: PathBuf,
        /// The tensors
        #[arg(value_name = "NAME=FILE.npy", required = true, value_parser = name_and_path)]
        tensors: Vec<(String, PathBuf)>,
    },
}

pub fn main(command: Command) -> Result<(), Failure> {
    match command {
        Command::List { file, json } => list(&file, json),
        Command::Extract { file, out } => extract(&file, &out),
        Command::Pack { out, tensors } => pack(&out, &tensors),
    }
}

fn load(file: &Path) -> Result<Vec<(String, NDArray)>, Failure> {
    if !file.is_file() {
        return Err(Failure::file(file, "no such file"));
    }
    load_params_file(file).in_file(file)
}

#[derive(Serialize)]
struct Entry {
    name: String,
    shape: Vec<i64>,
    dtype: String,
    bytes: usize,
}

fn list(file: &Path, json: bool) -> Result<(), Failure> {
    let entries: Vec<Entry> = load(file)?
        .into_iter()
        .map(|(name, a)| Entry { name, shape: a.shape().to_vec(), dtype: a.dtype().to_string(), bytes: a.nbytes() })
        .collect();
    let total: usize = entries.iter().map(|e| e.bytes).sum();
    if json {
        let report = serde_json::json!({ "file": file.display().to_string(), "tensors": entries, "bytes": total });
        println!("{}", serde_json::to_string_pretty(&report).expect("a report serializes"));
        return Ok(());
    }
    println!("{}: {} tensors, {} bytes", file.display(), entries.len(), thousands(total));
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| vec![e.name.clone(), format!("{:?}", e.shape), e.dtype.clone(), thousands(e.bytes)])
        .collect();
    print!("{}", render(&["name", "shape", "dtype", " bytes"], &rows));
    Ok(())
}

/// A tensor's file name: its name with path separators replaced.
fn npy_name(name: &str) -> String {
    name.chars().map(|c| if matches!(c, '/' | '\\' | ':') { '_' } else { c }).collect::<String>() + ".npy"
}

fn extract(file: &Path, out: &Path) -> Result<(), Failure> {
    let params = load(file)?;
    let mut names: Vec<String> = params.iter().map(|(n, _)| npy_name(n)).collect();
    names.sort();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(Failure::file(file, format!("two tensors would both be written to {}", w[0])));
    }
    std::fs::create_dir_all(out).in_file(out)?;
    for (name, array) in &params {
        let path = out.join(npy_name(name));
        write_npy(&path, array).map_err(|f| Failure { message: format!("param `{name}`: {}", f.message), ..f })?;
        println!("{name} -> {}", path.display());
    }
    Ok(())
}

fn pack(out: &Path, tensors: &[(String, PathBuf)]) -> Result<(), Failure> {
    for (k, (name, _)) in tensors.iter().enumerate() {
        if tensors[..k].iter().any(|(n, _)| n == name) {
            return Err(Failure::usage(format!("tensor `{name}` is given twice")));
        }
    }
    let arrays: Vec<NDArray> = tensors.iter().map(|(_, path)| read_npy(path)).collect::<Result<_, _>>()?;
    let named = tensors.iter().zip(&arrays).map(|((name, _), a)| (name.as_str(), a.tensor()));
    let bytes = save_params(named)?;
    std::fs::write(out, &bytes).in_file(out)?;
    println!("wrote {} tensors ({} bytes) to {}", tensors.len(), thousands(bytes.len()), out.display());
    Ok(())
}

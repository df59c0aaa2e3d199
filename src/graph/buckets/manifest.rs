//! A bucket manifest: a text file listing the artifacts (`export_library` files) of one model
//! compiled at several shapes, one path per line; blank lines and `#` comments are skipped, and
//! relative paths are relative to the manifest's directory. For tools and language bindings
//! that would rather name one file than load N modules.

use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::Module;
use std::path::{Path, PathBuf};

/// The artifact paths a manifest lists, resolved against its directory.
pub fn read_manifest(path: &Path) -> Result<Vec<PathBuf>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::value(format!("bucket manifest `{}`: {e}", path.display())))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let paths: Vec<PathBuf> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| dir.join(l))
        .collect();
    if paths.is_empty() {
        return Err(Error::value(format!("bucket manifest `{}` lists no artifacts", path.display())));
    }
    Ok(paths)
}

/// Load every artifact a manifest lists, each labelled with its path for messages.
pub fn load_manifest(path: &Path) -> Result<Vec<(Module, String)>> {
    read_manifest(path)?
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let label = p.display().to_string();
            let m = Module::load_from_file(&label, "")
                .map_err(|e| e.context(format!("bucket manifest `{}` entry {}", path.display(), i + 1)))?;
            Ok((m, label))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_paths_relative_to_the_manifest() {
        let dir = std::env::temp_dir().join(format!("tvm-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let m = dir.join("model.buckets");
        std::fs::write(&m, "# batch buckets\nmodel_b1.so\n\n  /abs/model_b2.so  # two\n").unwrap();
        assert_eq!(read_manifest(&m).unwrap(), vec![dir.join("model_b1.so"), PathBuf::from("/abs/model_b2.so")]);
        std::fs::write(&m, "# nothing\n").unwrap();
        assert!(read_manifest(&m).unwrap_err().message().contains("lists no artifacts"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(read_manifest(&m).unwrap_err().message().contains("bucket manifest"));
    }
}

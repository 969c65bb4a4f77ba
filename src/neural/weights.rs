//! What loading a weights file into a module must have done: every tensor
//! the module has was found with its shape.

use burn::store::ApplyResult;

use crate::error::{Error, Result};

/// Fails, naming `name` (the file) and the tensors, when the load met
/// errors (a shape mismatch) or left module tensors missing.
pub fn check_applied(result: &ApplyResult, name: &str) -> Result<()> {
    if !result.errors.is_empty() {
        return Err(Error::model(name, result.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; ")));
    }
    if !result.missing.is_empty() {
        let missing = result.missing.iter().map(|m| format!("{m:?}")).collect::<Vec<_>>().join(", ");
        return Err(Error::model(name, format!("missing tensors: {missing}")));
    }
    Ok(())
}

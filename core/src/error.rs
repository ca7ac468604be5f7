//! The composite fault of a call that can meet both bad input and a broken
//! contract.

use crate::contract::ContractError;
use crate::input::InputError;

/// A step that failed either way: its input was refused, or an answer broke
/// the contract. Only calls that can truly meet both return it; the rest
/// return [`InputError`] or [`ContractError`] alone.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input was refused; nothing changed.
    #[error(transparent)]
    Input(#[from] InputError),
    /// An answer that cannot answer what was asked: the host stops.
    #[error(transparent)]
    Contract(#[from] ContractError),
}

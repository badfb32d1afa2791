//! Blob (EIP-4844) transactions in the pool: what eth_sendRawTransaction must carry and what
//! the pool keeps.
//!
//! A blob transaction reaches the pool in its network form, the signed transaction with its
//! sidecar (blobs, KZG commitments and proofs): version 0 with one blob proof per blob, or,
//! from Osaka, EIP-7594's version 1 with the cell proofs of every blob. [`check_shape`] runs
//! the cheap rules (a sidecar is there, the blob count is within the fork's limit, the sidecar
//! version suits the fork, the sidecar's lists line up with the versioned hashes, the blob fee
//! cap covers the next block's blob base fee); [`verify_proofs`] the expensive one (each
//! versioned hash is its commitment's, the KZG proofs hold), which the pool runs last, once
//! every other rule passed. The pool keeps the sidecar with the transaction (its byte budget
//! counts it) and hands block building the canonical form, [`without_sidecar`]: blocks, their
//! transaction roots and hashes never contain blobs.

use alloy_consensus::{Transaction as _, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_eips::eip4844::BlobTransactionValidationError;
use alloy_eips::eip4844::env_settings::EnvKzgSettings;
use alloy_eips::eip4844::kzg_to_versioned_hash;
use alloy_eips::eip7594::{BlobTransactionSidecarVariant, CELLS_PER_EXT_BLOB};
use alloy_eips::eip7840::BlobParams;
use hearth_messages::TxError;
pub use hearth_messages::mempool::without_sidecar;
use revm::primitives::hardfork::SpecId;

/// The sidecar of `tx` when it is a blob transaction in network form.
pub fn sidecar(tx: &TxEnvelope) -> Option<&BlobTransactionSidecarVariant> {
    match tx {
        TxEnvelope::Eip4844(signed) => signed.tx().sidecar(),
        _ => None,
    }
}

/// The encoded length of `tx` in its canonical form (what a block holds), without cloning it.
pub fn canonical_len(tx: &TxEnvelope) -> usize {
    match sidecar(tx) {
        // The network form is rlp([tx_payload_body, sidecar...]); the canonical form is the
        // payload body alone, under the same type byte.
        Some(_) => without_sidecar(tx).encode_2718_len(),
        None => tx.encode_2718_len(),
    }
}

/// The cheap rules a blob transaction must pass before the pool looks at its state: a sidecar,
/// no more blobs than `params` allow per transaction, a sidecar version `spec` takes, lists
/// that line up with the versioned hashes, and a blob fee cap of at least `blob_base_fee` (the
/// next block's). Other transactions pass.
pub fn check_shape(
    tx: &TxEnvelope,
    spec: SpecId,
    params: &BlobParams,
    blob_base_fee: u128,
) -> Result<(), TxError> {
    let TxEnvelope::Eip4844(signed) = tx else { return Ok(()) };
    let Some(sidecar) = signed.tx().sidecar() else { return Err(TxError::BlobSidecarMissing) };
    let hashes = signed.tx().tx().blob_versioned_hashes.len();
    if hashes as u64 > params.max_blobs_per_tx {
        return Err(TxError::TooManyBlobs { have: hashes, max: params.max_blobs_per_tx });
    }
    let (blobs, commitments, proofs, want_proofs) = match sidecar {
        BlobTransactionSidecarVariant::Eip4844(s) => {
            (s.blobs.len(), s.commitments.len(), s.proofs.len(), hashes)
        }
        BlobTransactionSidecarVariant::Eip7594(s) => {
            if !spec.is_enabled_in(SpecId::OSAKA) {
                return Err(TxError::BlobSidecarVersion { version: 1, fork: "Osaka" });
            }
            let want = hashes.saturating_mul(CELLS_PER_EXT_BLOB);
            (s.blobs.len(), s.commitments.len(), s.cell_proofs.len(), want)
        }
    };
    if blobs != hashes || commitments != hashes || proofs != want_proofs {
        return Err(TxError::BlobSidecarShape { hashes, blobs, commitments, proofs, want_proofs });
    }
    let cap = tx.max_fee_per_blob_gas().unwrap_or_default();
    if cap < blob_base_fee {
        return Err(TxError::BlobFeeTooLow { cap, blob_base_fee });
    }
    Ok(())
}

/// The expensive rule: every versioned hash is its commitment's, and the KZG proofs prove the
/// blobs against the commitments (c-kzg with the Ethereum trusted setup). Run after
/// [`check_shape`]; other transactions pass.
pub fn verify_proofs(tx: &TxEnvelope) -> Result<(), TxError> {
    let TxEnvelope::Eip4844(signed) = tx else { return Ok(()) };
    let Some(sidecar) = signed.tx().sidecar() else { return Err(TxError::BlobSidecarMissing) };
    let hashes = &signed.tx().tx().blob_versioned_hashes;
    // Checked here too so the error names the blob; alloy's check stops at the first as well.
    for (index, (have, commitment)) in hashes.iter().zip(sidecar.commitments()).enumerate() {
        let expected = kzg_to_versioned_hash(commitment.as_slice());
        if *have != expected {
            return Err(TxError::BlobHashMismatch { index, have: *have, expected });
        }
    }
    sidecar.validate(hashes, EnvKzgSettings::Default.get()).map_err(|e| match e {
        BlobTransactionValidationError::WrongVersionedHash { have, expected } => {
            let index = hashes.iter().position(|h| *h == have).unwrap_or_default();
            TxError::BlobHashMismatch { index, have, expected }
        }
        BlobTransactionValidationError::InvalidProof => {
            TxError::InvalidBlobProof("a KZG proof does not verify against its blob".into())
        }
        // A proof or commitment that is not a curve point, a blob element out of the field.
        BlobTransactionValidationError::KZGError(e) => {
            TxError::InvalidBlobProof(format!("malformed blob, commitment or proof ({e:?})"))
        }
        other => TxError::InvalidBlobProof(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use alloy_consensus::{
        SidecarBuilder, SignableTransaction, Signed, SimpleCoder, TxEip4844, TxEip4844Variant,
    };
    use alloy_eips::eip4844::BlobTransactionSidecar;
    use alloy_primitives::{Address, B256, Bytes, U256};
    use alloy_signer::SignerSync;
    use alloy_signer_local::PrivateKeySigner;

    use super::*;

    fn signed(sidecar: Option<BlobTransactionSidecarVariant>, hashes: Vec<B256>) -> TxEnvelope {
        let tx = TxEip4844 {
            chain_id: 1,
            nonce: 0,
            gas_limit: 21_000,
            max_fee_per_gas: 10,
            max_priority_fee_per_gas: 1,
            to: Address::repeat_byte(0xb0),
            value: U256::ZERO,
            access_list: Default::default(),
            blob_versioned_hashes: hashes,
            max_fee_per_blob_gas: 1,
            input: Bytes::new(),
        };
        let key = PrivateKeySigner::from_bytes(&B256::repeat_byte(7)).expect("valid key");
        let signature = key.sign_hash_sync(&tx.signature_hash()).expect("signs");
        let hash = *tx.clone().into_signed(signature).hash();
        let variant: TxEip4844Variant = match sidecar {
            Some(s) => tx.with_sidecar(s).into(),
            None => tx.into(),
        };
        TxEnvelope::Eip4844(Signed::new_unchecked(variant, signature, hash))
    }

    fn sidecar_of(data: &[u8]) -> BlobTransactionSidecar {
        SidecarBuilder::<SimpleCoder>::from_slice(data).build().expect("builds")
    }

    fn valid() -> TxEnvelope {
        let sidecar = sidecar_of(b"hearth blobs");
        let hashes = sidecar.versioned_hashes().collect();
        signed(Some(sidecar.into()), hashes)
    }

    #[test]
    fn a_valid_sidecar_passes_and_the_canonical_form_drops_it() {
        let tx = valid();
        check_shape(&tx, SpecId::PRAGUE, &BlobParams::prague(), 1).expect("shape");
        verify_proofs(&tx).expect("proofs");
        let canonical = without_sidecar(&tx);
        assert_eq!(canonical.tx_hash(), tx.tx_hash());
        assert!(sidecar(&canonical).is_none());
        assert_eq!(canonical_len(&tx), canonical.encode_2718_len());
        // A blob is 128 KiB: the network form is that much larger than the canonical one.
        assert!(tx.encode_2718_len() > canonical_len(&tx) + 131_072);
        assert_eq!(
            check_shape(&canonical, SpecId::PRAGUE, &BlobParams::prague(), 1),
            Err(TxError::BlobSidecarMissing)
        );
    }

    #[test]
    fn bad_sidecars_are_refused_each_with_its_reason() {
        let good = sidecar_of(b"hearth blobs");
        let hashes: Vec<B256> = good.versioned_hashes().collect();
        let prague = BlobParams::prague();

        let mut proof = good.clone();
        proof.proofs[0] = sidecar_of(b"other").proofs[0];
        let err = verify_proofs(&signed(Some(proof.into()), hashes.clone())).unwrap_err();
        assert!(matches!(err, TxError::InvalidBlobProof(_)), "{err}");

        let wrong = vec![B256::with_last_byte(1)];
        let err = verify_proofs(&signed(Some(good.clone().into()), wrong)).unwrap_err();
        assert!(matches!(err, TxError::BlobHashMismatch { index: 0, .. }), "{err}");

        let mut short = good.clone();
        short.proofs.clear();
        let err =
            check_shape(&signed(Some(short.into()), hashes.clone()), SpecId::PRAGUE, &prague, 1);
        assert!(matches!(err, Err(TxError::BlobSidecarShape { proofs: 0, .. })), "{err:?}");

        let ten = vec![hashes[0]; 10];
        let mut many = good.clone();
        many.blobs = vec![good.blobs[0]; 10];
        let err = check_shape(&signed(Some(many.into()), ten), SpecId::PRAGUE, &prague, 1);
        assert_eq!(err, Err(TxError::TooManyBlobs { have: 10, max: 9 }));

        let err = check_shape(&valid(), SpecId::PRAGUE, &prague, 2);
        assert_eq!(err, Err(TxError::BlobFeeTooLow { cap: 1, blob_base_fee: 2 }));
    }

    #[test]
    fn cell_proofs_wait_for_osaka() {
        let good = sidecar_of(b"hearth blobs");
        let hashes: Vec<B256> = good.versioned_hashes().collect();
        let cells = alloy_eips::eip7594::BlobTransactionSidecarEip7594 {
            blobs: good.blobs.clone(),
            commitments: good.commitments.clone(),
            cell_proofs: vec![Default::default(); CELLS_PER_EXT_BLOB],
        };
        let tx = signed(Some(BlobTransactionSidecarVariant::Eip7594(cells)), hashes);
        assert_eq!(
            check_shape(&tx, SpecId::PRAGUE, &BlobParams::prague(), 1),
            Err(TxError::BlobSidecarVersion { version: 1, fork: "Osaka" })
        );
        check_shape(&tx, SpecId::OSAKA, &BlobParams::osaka(), 1).expect("shape holds in Osaka");
        // Zeroed cell proofs are not proofs.
        assert!(matches!(verify_proofs(&tx), Err(TxError::InvalidBlobProof(_))));
        // Real ones, computed from the blob, are.
        let cells = good.try_into_7594(EnvKzgSettings::Default.get()).expect("cell proofs");
        let hashes = cells.versioned_hashes().collect();
        let tx = signed(Some(BlobTransactionSidecarVariant::Eip7594(cells)), hashes);
        check_shape(&tx, SpecId::OSAKA, &BlobParams::osaka(), 1).expect("shape");
        verify_proofs(&tx).expect("cell proofs verify");
    }
}

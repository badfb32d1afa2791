//! Sender recovery for many transactions at once: an imported block's, or a batch of raw
//! transactions the pool admits. Each recovery is an independent secp256k1 public-key
//! recovery (tens of microseconds), so a block's are spread over scoped threads in contiguous
//! chunks and joined back in order: the results, and so the first failing index, are exactly
//! those of recovering one after another.

/// Fewest items recovered in parallel; fewer are recovered on the calling thread. Starting a
/// scoped thread costs tens of microseconds, about one recovery, so a handful of signatures
/// is no faster spread (`hearth-parallel-bench --workload senders` prints the crossover).
pub const MIN_PARALLEL_SENDERS: usize = 16;

/// `recover` applied to every item of `items`, in order, on up to `threads` threads (the
/// calling thread is one of them). Below [`MIN_PARALLEL_SENDERS`] items, or with one thread,
/// it runs on the calling thread alone.
pub fn recover_all<T, R, F>(items: &[T], threads: usize, recover: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    if items.len() < MIN_PARALLEL_SENDERS || threads < 2 {
        return items.iter().map(&recover).collect();
    }
    recover_spread(items, threads, &recover)
}

/// `recover` over `items` split into `threads` contiguous chunks, the first on the calling
/// thread; joined in chunk order. [`recover_all`] without its threshold (for measuring it).
pub fn recover_spread<T, R, F>(items: &[T], threads: usize, recover: &F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let chunk = items.len().div_ceil(threads.max(1)).max(1);
    let mut chunks = items.chunks(chunk);
    let Some(first) = chunks.next() else { return Vec::new() };
    // The threads started here keep off this one's core (`hearth_storage::cpu`).
    let caller = hearth_storage::cpu::CallerCpu::now();
    std::thread::scope(|s| {
        let rest: Vec<_> = chunks
            .map(|part| {
                s.spawn(move || {
                    caller.avoid();
                    part.iter().map(recover).collect::<Vec<_>>()
                })
            })
            .collect();
        caller.let_started_move();
        let mut out: Vec<R> = first.iter().map(recover).collect();
        out.reserve(items.len() - out.len());
        for handle in rest {
            // A panic in `recover` is re-raised here, as it would be on the calling thread.
            out.extend(handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use alloy_consensus::transaction::SignerRecoverable;
    use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
    use alloy_primitives::{Address, Signature, TxKind, U256};
    use alloy_signer::SignerSync;
    use alloy_signer_local::PrivateKeySigner;

    use super::*;

    /// `n` transactions from `n` distinct keys; returns them with their signers' addresses.
    fn signed(n: usize) -> (Vec<TxEnvelope>, Vec<Address>) {
        (0..n)
            .map(|i| {
                let mut key = [0u8; 32];
                key[24..].copy_from_slice(&(i as u64 + 1).to_be_bytes());
                let signer = PrivateKeySigner::from_slice(&key).expect("valid key");
                let tx = TxEip1559 {
                    chain_id: 1,
                    nonce: i as u64,
                    gas_limit: 21_000,
                    max_fee_per_gas: 1,
                    to: TxKind::Call(Address::with_last_byte(1)),
                    value: U256::from(i),
                    ..Default::default()
                };
                let sig = signer.sign_hash_sync(&tx.signature_hash()).expect("signs");
                (TxEnvelope::from(tx.into_signed(sig)), signer.address())
            })
            .unzip()
    }

    /// `tx` with an `r` of zero, which recovers to no key.
    fn unrecoverable(tx: &TxEnvelope) -> TxEnvelope {
        let TxEnvelope::Eip1559(signed) = tx else { panic!("an EIP-1559 transaction") };
        let bad = Signature::new(U256::ZERO, signed.signature().s(), false);
        TxEnvelope::from(signed.tx().clone().into_signed(bad))
    }

    fn recover(tx: &TxEnvelope) -> Result<Address, String> {
        tx.recover_signer().map_err(|e| e.to_string())
    }

    #[test]
    fn many_senders_recover_the_same_in_order_both_ways() {
        let (txs, addresses) = signed(203);
        let sequential: Vec<_> = txs.iter().map(recover).collect();
        for threads in [2, 3, 8, 500] {
            let parallel = recover_spread(&txs, threads, &recover);
            assert_eq!(parallel, sequential, "{threads} threads");
            assert_eq!(recover_all(&txs, threads, recover), sequential);
        }
        let recovered: Vec<_> = sequential.into_iter().map(Result::unwrap).collect();
        assert_eq!(recovered, addresses);
    }

    #[test]
    fn a_bad_signature_is_reported_at_its_index() {
        let (mut txs, _) = signed(100);
        for k in [0, 37, 49, 50, 99] {
            let good = txs[k].clone();
            txs[k] = unrecoverable(&good);
            let results = recover_all(&txs, 4, recover);
            assert_eq!(results.len(), txs.len());
            let first_bad = results.iter().position(Result::is_err);
            assert_eq!(first_bad, Some(k), "bad signature at {k}");
            assert_eq!(results[k], recover(&txs[k]));
            txs[k] = good;
        }
    }

    #[test]
    fn few_or_no_items_stay_on_the_calling_thread() {
        let caller = std::thread::current().id();
        let on_caller = recover_all(&[1u8; MIN_PARALLEL_SENDERS - 1], 8, |_| {
            std::thread::current().id() == caller
        });
        assert!(on_caller.iter().all(|&here| here));
        let spread = recover_all(&[1u8; 4 * MIN_PARALLEL_SENDERS], 4, |_| {
            std::thread::current().id() == caller
        });
        assert!(spread.iter().any(|&here| !here), "spread over other threads too");
        assert!(recover_all(&[] as &[u8], 8, |&x| x).is_empty());
    }
}

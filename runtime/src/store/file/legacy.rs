//! The checkpoint files of stores before format 5 (one `.ckpt` file per
//! checkpoint), still read by [`FileStore`]; and the identity check that
//! both they and log records pass.

use std::fs::{self, File};
use std::io::{ErrorKind, Read};

use super::super::error::StoreError;
use super::{FileStore, file_what};
use crate::checkpoint::files::{
    CHECKPOINT_PREFIX, checkpoint_header_info, decode_checkpoint_file, decode_checkpoint_meta,
};
use crate::checkpoint::record::{Checkpoint, CheckpointId, CheckpointMeta};

impl FileStore {
    pub(super) fn read_checkpoint(
        &self,
        run_id: &str,
        id: &CheckpointId,
    ) -> Result<Option<Checkpoint>, StoreError> {
        let path = self.checkpoint_path(run_id, id);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io("read", &path, e)),
        };
        let what = file_what(&path);
        let cp = decode_checkpoint_file(&bytes, &what)?;
        check_identity(&cp.run_id, &cp.id, run_id, id, &what)?;
        Ok(Some(cp))
    }

    /// Reads only a checkpoint file's header.
    pub(super) fn read_meta(
        &self,
        run_id: &str,
        id: &CheckpointId,
    ) -> Result<Option<CheckpointMeta>, StoreError> {
        let path = self.checkpoint_path(run_id, id);
        let mut file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io("open", &path, e)),
        };
        let what = file_what(&path);
        let mut prefix = [0u8; CHECKPOINT_PREFIX];
        let got =
            read_up_to(&mut file, &mut prefix).map_err(|e| StoreError::io("read", &path, e))?;
        let info = checkpoint_header_info(&prefix[..got], &what)?;
        let mut header = vec![0u8; info.len];
        let got =
            read_up_to(&mut file, &mut header).map_err(|e| StoreError::io("read", &path, e))?;
        if got < info.len {
            return Err(StoreError::corrupt(
                what,
                format!("truncated: header needs {} bytes, {got} left", info.len),
            ));
        }
        let meta = decode_checkpoint_meta(&header, info, &what)?;
        check_identity(&meta.run_id, &meta.id, run_id, id, &what)?;
        // The payload's length is checked here too, so a listing does not
        // show a checkpoint that cannot be loaded because it was cut short.
        let len = file
            .metadata()
            .map_err(|e| StoreError::io("stat", &path, e))?
            .len();
        let expected = (CHECKPOINT_PREFIX + info.len) as u64 + meta.payload_len;
        if len != expected {
            return Err(StoreError::corrupt(
                what,
                format!("truncated or padded: {len} bytes, the header says {expected}"),
            ));
        }
        Ok(Some(meta))
    }
}

/// A file that holds another checkpoint than its name says was copied or
/// renamed by hand: using it would resume the wrong run.
pub(super) fn check_identity(
    found_run: &str,
    found_id: &CheckpointId,
    run_id: &str,
    id: &CheckpointId,
    what: &str,
) -> Result<(), StoreError> {
    if found_run != run_id || found_id != id {
        return Err(StoreError::corrupt(
            what,
            format!(
                "holds checkpoint {found_id} of run '{found_run}', but its path says {id} of run '{run_id}'"
            ),
        ));
    }
    Ok(())
}

/// Fills `buf` as far as the file allows; returns how much was read.
fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

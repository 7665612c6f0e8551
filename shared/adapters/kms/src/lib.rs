//! KMS envelope encryption behind the core's [`KeySealer`] port, for
//! people's tokens in the turns table.
//!
//! Each seal asks KMS for a fresh 256-bit data key (`GenerateDataKey`
//! under the template's key, with the encryption context the caller names:
//! team, user, provider), encrypts with AES-256-GCM (the context is the
//! associated data too) and keeps the data key only as KMS encrypted it.
//! Opening asks KMS to `Decrypt` that blob with the same context: a sealed
//! token copied to another person's item, or altered, does not open, and
//! every open is in CloudTrail. Two calls over KMS's JSON protocol, signed
//! by the process's one signer: the SDK's KMS client would add a client's
//! code for them.
//!
//! A seal is `v1.{data key blob}.{nonce}.{ciphertext}`, each base64url.

use adapters_sigv4::{AwsApi, Repeat, Service, Signer};
use assistant_core::ports::{KeySealer, PortError};
use async_trait::async_trait;
use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Map, Value, json};

pub const KMS: Service = Service {
    signing_name: "kms",
    endpoint_prefix: "kms",
    endpoint_variable: "AWS_ENDPOINT_URL_KMS",
    json_target: Some(("TrentService", "1.1")),
};

const VERSION: &str = "v1";

pub struct KmsSealer {
    api: AwsApi,
    key_id: String,
}

impl KmsSealer {
    /// Seals under `key_id` (a key id, ARN or alias), as the process's AWS identity.
    pub fn new(signer: &Signer, http: reqwest::Client, key_id: &str) -> Self {
        Self { api: AwsApi::new(http, signer.clone(), KMS, None), key_id: key_id.to_owned() }
    }
}

fn context_json(context: &[(&'static str, &str)]) -> Value {
    Value::Object(context.iter().map(|(name, value)| ((*name).to_owned(), json!(value))).collect::<Map<_, _>>())
}

/// The context as associated data: the same bytes for the same context.
fn aad(context: &[(&'static str, &str)]) -> Vec<u8> {
    context_json(context).to_string().into_bytes()
}

fn failed(operation: &'static str, reason: impl Into<String>) -> PortError {
    PortError::new(operation, reason.into())
}

fn key_from(plaintext_b64: Option<&str>, operation: &'static str) -> Result<LessSafeKey, PortError> {
    let bytes = STANDARD
        .decode(plaintext_b64.ok_or_else(|| failed(operation, "KMS answered without a data key"))?)
        .map_err(|_| failed(operation, "KMS answered a data key that is not base64"))?;
    let key = UnboundKey::new(&AES_256_GCM, &bytes).map_err(|_| failed(operation, "the data key is not 256 bits"))?;
    Ok(LessSafeKey::new(key))
}

#[async_trait]
impl KeySealer for KmsSealer {
    async fn seal(&self, plaintext: &[u8], context: &[(&'static str, &str)]) -> Result<String, PortError> {
        const OP: &str = "KMS GenerateDataKey";
        let input = json!({"KeyId": self.key_id, "KeySpec": "AES_256", "EncryptionContext": context_json(context)});
        // Generating a key changes nothing: repeat freely.
        let answer =
            self.api.call("GenerateDataKey", &input, Repeat::Safe).await.map_err(|err| failed(OP, err.to_string()))?;
        let key = key_from(answer["Plaintext"].as_str(), OP)?;
        let blob =
            answer["CiphertextBlob"].as_str().ok_or_else(|| failed(OP, "KMS answered without the encrypted key"))?;
        let blob = STANDARD.decode(blob).map_err(|_| failed(OP, "the encrypted key is not base64"))?;
        let mut nonce = [0u8; NONCE_LEN];
        aws_lc_rs::rand::SecureRandom::fill(&aws_lc_rs::rand::SystemRandom::new(), &mut nonce)
            .map_err(|_| failed(OP, "no random nonce"))?;
        let mut sealed = plaintext.to_vec();
        key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(aad(context)), &mut sealed)
            .map_err(|_| failed(OP, "AES-GCM refused to seal"))?;
        Ok([
            VERSION.to_owned(),
            URL_SAFE_NO_PAD.encode(blob),
            URL_SAFE_NO_PAD.encode(nonce),
            URL_SAFE_NO_PAD.encode(sealed),
        ]
        .join("."))
    }

    async fn open(&self, sealed: &str, context: &[(&'static str, &str)]) -> Result<Vec<u8>, PortError> {
        const OP: &str = "KMS Decrypt";
        let parts: Vec<&str> = sealed.split('.').collect();
        let [VERSION, blob, nonce, ciphertext] = parts[..] else {
            return Err(failed(OP, "not a seal this build made"));
        };
        let decode =
            |part: &str| URL_SAFE_NO_PAD.decode(part).map_err(|_| failed(OP, "a seal's part is not base64url"));
        let (blob, nonce, mut ciphertext) = (decode(blob)?, decode(nonce)?, decode(ciphertext)?);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| failed(OP, "a seal's nonce is not 96 bits"))?;
        let input = json!({"CiphertextBlob": STANDARD.encode(blob), "EncryptionContext": context_json(context)});
        let answer = self.api.call("Decrypt", &input, Repeat::Safe).await.map_err(|err| failed(OP, err.to_string()))?;
        let key = key_from(answer["Plaintext"].as_str(), OP)?;
        let plaintext = key
            .open_in_place(Nonce::assume_unique_for_key(nonce), Aad::from(aad(context)), &mut ciphertext)
            .map_err(|_| failed(OP, "the seal does not open with its context (altered, or another person's)"))?;
        Ok(plaintext.to_vec())
    }
}

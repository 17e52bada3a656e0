//! openWakeWord: the mel frontend, the speech-embedding CNN and the wake-word heads.
//!
//! - [`mel`]: 16 kHz int16-scale audio -> `[frames, 32]` log-mel spectrogram in dB
//!   (built at compile time, no allocation), and openWakeWord's feature scaling.
//! - [`embedding`]: the speech-embedding CNN, `[76, 32]` mel window → `[96]` embedding.
//! - [`incremental`]: the same CNN computing only the rows each chunk adds (about a sixth
//!   of the instructions per chunk, the same bits); the detector's default.
//! - [`head`]: the wake-word heads, last 16 embeddings `[16, 96]` → score in `(0, 1)`.
//! - [`names`]: the tensor names of the converted files; `load` (feature `alloc`): those
//!   files → the plans' prepared operators (`EmbeddingNetWeights::load`, `HeadNet::load`).
//! - [`stream`]: the streaming semantics (chunks of 1280 samples, warm-up, pieces).
//! - [`detector`]: audio → one score per wake word per push on a backend `B`
//!   (`WakeDetectorOn<B>`); `selection` (feature `std`): the same configured by session
//!   options (`WakeDetector`); [`trigger`]: scores → detections; `session` (feature
//!   `std`): one stream's detector, triggers and time (`WakeSession`), as the program, the
//!   server and the C API use it.
//! - `builtin` (feature `std`): the official models, embedded, by name or path.
//! - `custom` (feature `import`): users' own heads from `.onnx` and `.tflite` files.
//!
//! Facts about the official models (layer shapes, streaming semantics) are checked against
//! the official runtime by the converter in `tools/openwakeword/`.
//!
//! # Example
//! A detector for hey_jarvis on 16 kHz mono int16 audio, in chunks of 1280 samples (any size
//! works; 1280 gives one score per 80 ms, see [`stream`] for larger pushes):
//!
//! ```
//! use neon_models::openwakeword::session::WakeSession;
//! use neon_models::openwakeword::{builtin, selection::WakeDetector, trigger::Trigger};
//! use neon_models::session::SessionOptions;
//!
//! # fn main() -> Result<(), neon_models::Error> {
//! let audio_i16 = vec![0i16; 16_000];
//! let words = vec![builtin::wake_word("hey_jarvis")?];
//! // The default backend; e.g. `openwakeword.exec_plan={"embedding":"portable"}` selects.
//! let options = SessionOptions::new();
//! let detector = WakeDetector::with_builtin_embedding(words, &options)?;
//! // Threshold 0.5, refractory period 1 s (in samples).
//! let mut wake = WakeSession::new(detector, Trigger::new(0.5, 16_000));
//! for chunk in audio_i16.chunks(1280) {
//!     wake.push(chunk)?; // one score per wake word, no allocation
//!     for d in wake.detections() {
//!         println!("{} at {:.2} s", wake.words()[d.model].name(), d.end_sample as f64 / 16e3);
//!     }
//! }
//! assert!(wake.scores()[0] < 0.5); // silence
//! wake.reset(); // a new stream
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "std")]
pub mod builtin;
#[cfg(feature = "import")]
pub mod custom;
#[cfg(feature = "alloc")]
pub mod detector;
pub mod embedding;
pub mod head;
pub mod incremental;
#[cfg(feature = "alloc")]
mod load;
pub mod mel;
pub mod names;
#[cfg(feature = "std")]
pub mod selection;
#[cfg(feature = "std")]
pub mod session;
pub mod stream;
pub mod trigger;

//! ONNX's protobuf messages (`ModelProto`, `GraphProto`, `NodeProto`, `TensorProto`, ...) as
//! prost types, generated from `onnx/onnx.proto` of the onnx 1.23.2 wheel by
//! `tools/openwakeword/gen_onnx_proto.sh` (committed; nothing is generated at build time).
//!
//! The message definitions and their documentation are ONNX's:
//! Copyright (c) ONNX Project Contributors. Licensed under the Apache License, Version 2.0
//! (SPDX-License-Identifier: Apache-2.0); you may not use this file except in compliance with
//! the License. You may obtain a copy of the License at
//! <http://www.apache.org/licenses/LICENSE-2.0>. Unless required by applicable law or agreed
//! to in writing, software distributed under the License is distributed on an "AS IS" BASIS,
//! WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the License
//! for the specific language governing permissions and limitations under the License.

#[rustfmt::skip]
#[allow(
    missing_docs,
    clippy::all,
    clippy::pedantic,
    rustdoc::all,
    unreachable_pub,
    dead_code
)]
mod onnx;

pub use onnx::*;

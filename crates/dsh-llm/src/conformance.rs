//! The adapter conformance kit (feature `testkit`): a reusable suite that
//! checks an adapter's chunk stream against the contract of [`crate::StreamChunk`].

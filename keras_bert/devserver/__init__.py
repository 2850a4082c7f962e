"""The development model server: TF Serving's gRPC and REST protocols over exports loaded as
TF Serving loads them (`model_store`: versions, warmup, validation; `server`: gRPC;
`rest`: the REST API; `batcher`: merging concurrent requests). For local work and tests;
production runs the official `tensorflow/serving` images (`export/README.md`)."""

"""Reading a campaign folder's bytes: the tree walk, the one streamed pass per file (size,
SHA-256, temporary-path scan) and the streamed readers of predictions, corpora and
measurements. Above ``core``, beside ``reload``; no pytest, no torch.
"""

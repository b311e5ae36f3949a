"""crf: linear-chain conditional random fields at Wapiti scale."""

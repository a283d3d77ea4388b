"""The live GPU monitor's parts, below its command (`api.monitor`, `invoke monitor`), which
re-exports their names.

`samples` owns the parsed samples (one GPU of one host per nvidia-smi CSV line, grouped into
whole samples) and HostState; `alerts` the thresholds and a GPU's or host's alerts; `stream`
the remote nvidia-smi commands and the running stream of one host (an SSH exec channel or a
local process); `live` the Monitor (one worker thread per host, reconnecting with backoff) and
`sample_once`; `render` the rich table fitted to the terminal. No Invoke imports here.
"""

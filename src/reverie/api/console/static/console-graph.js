// The console's graph script: filled by its page's work.

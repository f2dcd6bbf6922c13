// The console's charts script: filled by its page's work.

// The console's memory page script (loaded on every page; acts only on its own elements after each swap).

"""What two check families share: each rule in one place, below the families that apply it
(no family imports another: import-linter's independence contract)."""

"""The codemod: LibCST analysis and rules. Knows nothing of files."""

// The wire types an app names when it handles sync results and conflicts
// (`ColumnValue`, `ConflictPolicy`, `Conflict.Kind`, `ServerRow`, …) come
// with `import Ferry` alone: they are part of the client's API.
@_exported import FerryProtocol

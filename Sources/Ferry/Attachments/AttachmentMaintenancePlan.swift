/// What maintenance does to the attachment files and their states, decided
/// from what is on disk and what the database says, without touching either.
///
/// ```swift
/// let plan = AttachmentMaintenancePlan(records: records, disk: disk, inFlight: working)
/// plan.remove          // files no attachment needs: staging leftovers, orphans
/// plan.markMissing     // attachments whose file is gone
/// ```
struct AttachmentMaintenancePlan: Sendable, Equatable {
    /// An attachment as the database knows it.
    struct Record: Sendable, Hashable {
        var id: String
        /// Its file's path under `attachments/`.
        var path: String
        /// Its whole file's size on disk (sealed files are larger than their bytes).
        var size: Int64
        /// Its local state (`nil`: never on this device).
        var state: AttachmentFileRecord.State?
    }

    /// The files found under the attachments root, by area, path → size.
    struct Disk: Sendable, Equatable {
        /// `staging/<name>`.
        var staging: [String: Int64] = [:]
        /// `temp/<id>`.
        var temp: [String: Int64] = [:]
        /// `attachments/<table>/<row>/<id>`, path relative to `attachments/`.
        var attachments: [String: Int64] = [:]
    }

    /// Paths relative to the root (`staging/…`, `temp/…`, `attachments/…`).
    var remove: [String] = []
    var markMissing: [String] = []
    /// Attachments whose file is whole here while their state says otherwise
    /// (a download killed between its rename and its state write).
    var markPresent: [String] = []
    /// `ferry_attachment_files` rows whose attachment is gone.
    var forget: [String] = []

    /// `inFlight` names what an add or a download of this process is
    /// working on: neither its files nor its state are touched.
    init(records: [Record], fileStates: Set<String>, disk: Disk, inFlight: Set<String>) {
        let byID = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let byPath = Dictionary(records.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        // A staged file belongs to an add under way, or to none.
        for name in disk.staging.keys.sorted() where !inFlight.contains(name) {
            remove.append("staging/" + name)
        }
        // A partial download is kept while its attachment still needs it.
        for (name, size) in disk.temp.sorted(by: { $0.key < $1.key }) where !inFlight.contains(name) {
            guard let record = byID[name], size <= record.size, disk.attachments[record.path] != record.size else {
                remove.append("temp/" + name)
                continue
            }
        }
        for (path, size) in disk.attachments.sorted(by: { $0.key < $1.key }) {
            let id = String(path.split(separator: "/").last ?? "")
            guard !inFlight.contains(id) else { continue }
            if let record = byPath[path], record.size == size { continue }
            remove.append("attachments/" + path)
        }
        for record in records.sorted(by: { $0.id < $1.id }) where !inFlight.contains(record.id) {
            let whole = disk.attachments[record.path] == record.size
            if whole, record.state == nil || record.state == .missing || record.state == .downloading {
                markPresent.append(record.id)
            } else if !whole, record.state != nil, record.state != .missing {
                markMissing.append(record.id)
            }
        }
        forget = fileStates.subtracting(byID.keys).subtracting(inFlight).sorted()
    }
}

/// The code drawn for people to scan.
extension QRCode {
    /// For a terminal: two rows of modules per line with the half-block characters, the quiet zone
    /// included, light modules drawn (a terminal's background is usually dark, and a scanner needs
    /// dark modules on light). As `qrencode -t UTF8` draws it.
    package var terminalText: String {
        let margin = Self.quietZone
        let range = -margin..<(size + margin)
        var text = ""
        for top in stride(from: range.lowerBound, to: range.upperBound, by: 2) {
            for column in range {
                let upper = !isDark(row: top, column: column)
                // Past the last row (an odd number of rows) is light, as a margin is.
                let lower = !isDark(row: top + 1, column: column)
                let character: String =
                    switch (upper, lower) {
                    case (true, true): "█"
                    case (true, false): "▀"
                    case (false, true): "▄"
                    case (false, false): " "
                    }
                text += character
            }
            text += "\n"
        }
        return text
    }

    /// For a web page: an SVG image, one path of dark modules on a white square with the quiet zone,
    /// `modulePixels` per module; crisp at any zoom, and small.
    package func svg(modulePixels: Int = 6) -> String {
        let side = (size + 2 * Self.quietZone) * modulePixels
        var path = ""
        for row in 0..<size {
            var column = 0
            while column < size {
                guard isDark(row: row, column: column) else {
                    column += 1
                    continue
                }
                // A run of dark modules is one rectangle.
                let start = column
                while column < size, isDark(row: row, column: column) { column += 1 }
                let x = (start + Self.quietZone) * modulePixels
                let y = (row + Self.quietZone) * modulePixels
                path +=
                    "M\(x) \(y)h\((column - start) * modulePixels)v\(modulePixels)h-\((column - start) * modulePixels)z"
            }
        }
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(side)" height="\(side)" viewBox="0 0 \(side) \(side)" \
            shape-rendering="crispEdges"><rect width="\(side)" height="\(side)" fill="#fff"/>\
            <path fill="#000" d="\(path)"/></svg>
            """
    }

    /// A binary PGM image (netpbm's simplest grey format), `modulePixels` per module, the quiet zone
    /// included: what tools that read images (a decoder in a test) take without any library.
    package func pgm(modulePixels: Int = 4) -> [UInt8] {
        let side = (size + 2 * Self.quietZone) * modulePixels
        var bytes = Array("P5\n\(side) \(side)\n255\n".utf8)
        bytes.reserveCapacity(bytes.count + side * side)
        for y in 0..<side {
            let row = y / modulePixels - Self.quietZone
            for x in 0..<side {
                bytes.append(isDark(row: row, column: x / modulePixels - Self.quietZone) ? 0 : 255)
            }
        }
        return bytes
    }
}

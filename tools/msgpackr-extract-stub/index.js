// See package.json: msgpackr catches this and uses its pure JavaScript string decoding.
throw new Error('msgpackr-extract is not installed in this project');
